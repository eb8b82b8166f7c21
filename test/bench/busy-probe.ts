// What busy.bench.ts reads from a running Howk: the slow-lane topic's end offsets, an
// endpoint's view (GET /endpoints/:hash) and /stats. Field names are looked up loosely: the
// delivery engine's per-endpoint figures (an adaptive concurrency limit, a slow-lane counter)
// may be named differently, or not exist yet; then the figure is "n/a".
import { createHash } from 'node:crypto';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { Agent, request } from 'undici';

/** endpoint_hash as Howk computes it: the first 16 bytes of sha256(endpoint URL), hex. */
export const endpointHashOf = (url: string): string => createHash('sha256').update(url).digest('hex').slice(0, 32);

export const kafkaAdmin = async (brokers: string, clientId: string): Promise<Admin> => {
  const admin = new Kafka({ clientId, brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  return admin;
};

/** Sum of the end offsets of a topic's partitions (records ever written), 0 when it does not exist. */
export const endOffsets = async (admin: Admin, topic: string): Promise<number> => {
  try {
    const parts = await admin.fetchTopicOffsets(topic);
    return parts.reduce((a, p) => a + Number(p.high), 0);
  } catch {
    return 0;
  }
};

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
const at = (o: Json | undefined, path: string): Json | undefined => {
  let cur: Json | undefined = o;
  for (const k of path.split('.')) {
    if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return undefined;
    cur = cur[k];
  }
  return cur;
};
const numericLeaves = (o: Json | undefined, prefix = '', out: [string, number][] = []): [string, number][] => {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return out;
  for (const [k, v] of Object.entries(o)) {
    const p = prefix ? `${prefix}.${k}` : k;
    if (typeof v === 'number') out.push([p, v]);
    else numericLeaves(v, p, out);
  }
  return out;
};

/** Paths tried first, in order, for an endpoint's concurrency limit. */
const LIMIT_PATHS = ['concurrency.limit', 'limit', 'concurrency_limit', 'inflight_limit', 'adaptive.limit', 'concurrency.current', 'concurrency.current_limit', 'max_inflight'];

/** The endpoint's current concurrency limit, and the path it was read from. */
export const pickLimit = (view: Json | undefined): { path: string; value: number } | undefined => {
  for (const p of LIMIT_PATHS) {
    const v = at(view, p);
    if (typeof v === 'number') return { path: p, value: v };
  }
  // Any other numeric field named like a limit (but not a rate limit's settings).
  const hit = numericLeaves(view).find(([p]) => /(^|[._])limit$/i.test(p) && !/rate/i.test(p));
  return hit ? { path: hit[0], value: hit[1] } : undefined;
};

/** Numeric fields that look like slow-lane counters (e.g. `slow_lane.diverted`), for the report. */
export const slowCounters = (o: Json | undefined): [string, number][] => numericLeaves(o).filter(([p]) => /slow|divert/i.test(p));

export const getJson = async (url: string, apiKey: string, agent: Agent): Promise<Json | undefined> => {
  try {
    const r = await request(url, { headers: { authorization: `Bearer ${apiKey}` }, dispatcher: agent, headersTimeout: 5000, bodyTimeout: 5000 });
    const j = (await r.body.json()) as Json;
    return r.statusCode === 200 ? j : undefined;
  } catch {
    return undefined;
  }
};

export type Sample = { t: number; inflight?: number; limit?: number; limitPath?: string; slow: [string, number][] };

/** Samples GET /endpoints/:hash every `everyMs` until stopped. */
export const sampleEndpoint = (api: string, hash: string, apiKey: string, agent: Agent, everyMs: number) => {
  const samples: Sample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      const v = await getJson(`${api}/endpoints/${hash}`, apiKey, agent);
      const lim = pickLimit(v);
      const inflight = at(v, 'inflight');
      samples.push({ t, inflight: typeof inflight === 'number' ? inflight : undefined, limit: lim?.value, limitPath: lim?.path, slow: slowCounters(v) });
      const wait = t + everyMs - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  return {
    samples,
    stop: async () => {
      running = false;
      await loop;
      return samples;
    },
  };
};

/** The `last_1h` counters of GET /stats, as "name n, ..." (and any slow-lane counter). */
export const statsLine = async (api: string, apiKey: string, agent: Agent): Promise<{ line: string; slow: [string, number][] }> => {
  const j = await getJson(`${api}/stats`, apiKey, agent);
  const h = at(j, 'last_1h');
  if (!h || typeof h !== 'object') return { line: 'n/a', slow: [] };
  return {
    line: numericLeaves(h)
      .map(([k, v]) => `${k} ${v}`)
      .join(', '),
    slow: slowCounters(h),
  };
};
