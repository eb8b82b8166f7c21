import type { Redis } from 'ioredis';
import type { LimitSample } from '../../core/policy/adaptive-limit';
import { BATCH_SCRIPTS } from '../../workers/redis/scripts';

// Calling the guard scripts (admitDelivery, completeDelivery) directly by their header
// contracts, as the tests of the scripts do (test/integration/redis-admit-lua.test.ts,
// redis-guards-lua.test.ts).
//
// admitDelivery and completeDelivery take any number of requests per call and no KEYS: shared
// ARGV first (with the key prefixes), then the distinct endpoints (hash, host number), hosts
// (host, domain ceiling) and, for admitDelivery, configs of the call, each once, then each
// request's arguments in order, naming them by number. A request's now goes as '' when it is
// the previous one's. `one` sends a single request.
export type Req = { ep: string; host: string; hostMax: number; cfg?: string; now: number; args: (string | number)[] };
export const ADMIT_PREFIXES = ['paused:endpoint:', 'paused:config:', 'circuit:', 'rate:', 'domain_inflight:', 'inflight:', 'limit:', 'domain_limit:', 'endpoint_queued:'];
export const COMPLETE_PREFIXES = ['circuit:', 'inflight:', 'domain_inflight:', 'endpoint_errors:', 'limit:', 'domain_limit:', 'endpoint_latency:'];
const numbered = (list: string[], v: string) => {
  if (!list.includes(v)) list.push(v);
  return list.indexOf(v) + 1;
};
/** The ARGV after the shared ones: endpoints, hosts, configs (admitDelivery) or no sent marks (completeDelivery), then each request's (endpoint, [config], now, ...args). */
export const layout = (reqs: Req[], withConfigs: boolean) => {
  const eps: string[] = [];
  const hosts: string[] = [];
  const cfgs: string[] = [];
  let prev: number | undefined;
  const per = reqs.flatMap((r) => {
    const e = numbered(eps, JSON.stringify([r.ep, numbered(hosts, JSON.stringify([r.host, r.hostMax]))]));
    const now = r.now === prev ? '' : r.now;
    prev = r.now;
    return withConfigs ? [e, numbered(cfgs, r.cfg!), now, ...r.args] : [e, now, ...r.args];
  });
  const table = (list: string[]) => [list.length, ...list.flatMap((x) => JSON.parse(x) as (string | number)[])];
  // admitDelivery's configs; completeDelivery's sent marks section, empty here (M = 0).
  return [...table(eps), ...table(hosts), ...(withConfigs ? [cfgs.length, ...cfgs] : [0]), ...per];
};
const STATES: Record<string, string> = { C: 'CLOSED', O: 'OPEN', H: 'HALF_OPEN' };
/** completeDelivery's reply (a code per completion, then a triple per 'T') as one answer per completion. */
const perCompletion = ([codes, ...triples]: [string, ...unknown[]]) => [...codes].map((c) => (c === 'T' ? triples.splice(0, 3) : STATES[c]));
const LENGTH: Record<string, number> = { go: 7, park: 3, divert: 2, paused: 2, recovered: 1, wait: 1, rebuilding: 1 };
/** admitDelivery's flat reply (each answer's kind, then its fields) as one answer per request. */
const perRequest = (flat: unknown[]) => {
  const out: unknown[][] = [];
  for (let i = 0; i < flat.length; i += LENGTH[flat[i] as string]!) out.push(flat.slice(i, i + LENGTH[flat[i] as string]!));
  return out;
};
/** A completion's arguments after its endpoint and now: flags, error, ISO now, latency, webhook id. */
export type Done = {
  now: number;
  outcome?: 'success' | 'failure' | 'neutral';
  probe?: 0 | 1;
  ep?: 0 | 1;
  dom?: 0 | 1;
  error?: string;
  sample?: LimitSample;
  domainMax?: number;
  id?: string;
};
const OUTCOME = { success: 0, failure: 32, neutral: 64 };
export const completion = (c: Done): Req => ({
  ep: 'ep',
  host: 'h',
  hostMax: c.domainMax ?? 0,
  now: c.now,
  args: [
    (c.probe ? 1 : 0) + (c.ep ? 2 : 0) + (c.dom ? 4 : 0) + (c.sample?.drop ? 8 : 0) + (c.sample?.timeout ? 16 : 0) + OUTCOME[c.outcome ?? 'success'],
    c.error ?? '',
    c.error ? new Date(c.now).toISOString() : '',
    c.sample ? c.sample.ms : '',
    c.id ?? 'wh',
  ],
});

export const NOW = 1_750_000_000_000;

/** The calls that go to Redis: `runBatch` and `one` decode the replies as above. */
export const guardScriptCalls = (redis: () => Redis) => {
  const runBatch = async (name: 'admitDelivery' | 'completeDelivery', shared: (string | number)[], reqs: Req[], canary = '') =>
    name === 'admitDelivery'
      ? perRequest((await redis().eval(BATCH_SCRIPTS.admitDelivery, 0, ...shared, canary, ...ADMIT_PREFIXES, ...layout(reqs, true))) as unknown[])
      : perCompletion((await redis().eval(BATCH_SCRIPTS.completeDelivery, 0, ...shared, ...COMPLETE_PREFIXES, ...layout(reqs, false))) as [string, ...unknown[]]);
  const one = async (name: 'admitDelivery' | 'completeDelivery', shared: (string | number)[], req: Req) => (await runBatch(name, shared, [req]))[0];
  /** `n` in-flight leases held by other deliveries (members busy0…), running out at `until`. */
  const fill = async (key: string, n: number, until = NOW + 60_000) => {
    if (n > 0) await redis().zadd(key, ...Array.from({ length: n }, (_, i) => [until, `busy${i}`]).flat());
  };
  return { runBatch, one, fill };
};
