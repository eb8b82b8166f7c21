import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { freshLimit, recordSample, type LimitSample, type LimitState } from '../../core/policy/adaptive-limit';
import { createRedis } from '../../workers/redis/client';
import { flushOwnDb, useRedisDb } from '../helpers/redis-db';
import { BATCH_SCRIPTS } from '../../workers/redis/scripts';
import { VECTORS } from '../fixtures/limit-vectors';

// The four guard scripts against real Redis, called directly by their header contracts
// (KEYS, ARGV, returns), independent of RedisGuards around them. A db of its own (useRedisDb),
// flushed before each test.
const url = process.env.REDIS_URL;
if (!url) throw new Error('REDIS_URL is not set: the guard Lua tests need a real Redis (scripts/infra/redis.sh start prints one)');

const db = useRedisDb();
let redis: Redis;

beforeAll(() => {
  redis = createRedis(url, { db: db() });
});
afterAll(async () => {
  await redis.quit();
});
beforeEach(async () => {
  await flushOwnDb(redis, db());
});

// admitDelivery and completeDelivery take any number of requests per call and no KEYS: shared
// ARGV first (with the key prefixes), then the distinct endpoints (hash, host number), hosts
// (host, domain ceiling) and, for admitDelivery, configs of the call, each once, then each
// request's arguments in order, naming them by number. A request's now goes as '' when it is
// the previous one's. `one` sends a single request.
type Req = { ep: string; host: string; hostMax: number; cfg?: string; now: number; args: (string | number)[] };
const ADMIT_PREFIXES = ['paused:endpoint:', 'paused:config:', 'circuit:', 'rate:', 'domain_inflight:', 'inflight:', 'limit:', 'domain_limit:', 'endpoint_queued:'];
const COMPLETE_PREFIXES = ['circuit:', 'inflight:', 'domain_inflight:', 'endpoint_errors:', 'limit:', 'domain_limit:', 'endpoint_latency:'];
const numbered = (list: string[], v: string) => {
  if (!list.includes(v)) list.push(v);
  return list.indexOf(v) + 1;
};
/** The ARGV after the shared ones: endpoints, hosts, (configs,) then each request's (endpoint, [config], now, ...args). */
const layout = (reqs: Req[], withConfigs: boolean) => {
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
  return [...table(eps), ...table(hosts), ...(withConfigs ? [cfgs.length, ...cfgs] : []), ...per];
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
const runBatch = async (name: 'admitDelivery' | 'completeDelivery', shared: (string | number)[], reqs: Req[], canary = '') =>
  name === 'admitDelivery'
    ? perRequest((await redis.eval(BATCH_SCRIPTS.admitDelivery, 0, ...shared, canary, ...ADMIT_PREFIXES, ...layout(reqs, true))) as unknown[])
    : perCompletion((await redis.eval(BATCH_SCRIPTS.completeDelivery, 0, ...shared, ...COMPLETE_PREFIXES, ...layout(reqs, false))) as [string, ...unknown[]]);
const one = async (name: 'admitDelivery' | 'completeDelivery', shared: (string | number)[], req: Req) => (await runBatch(name, shared, [req]))[0];
/** A completion's arguments after its endpoint and now: flags, error, ISO now, latency, webhook id. */
type Done = {
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
const completion = (c: Done): Req => ({
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

const NOW = 1_750_000_000_000;

/** `n` in-flight leases held by other deliveries (members busy0…), running out at `until`. */
const fill = async (key: string, n: number, until = NOW + 60_000) => {
  if (n > 0) await redis.zadd(key, ...Array.from({ length: n }, (_, i) => [until, `busy${i}`]).flat());
};

describe('admitDelivery.lua', () => {
  const K = {
    pauseEp: 'paused:endpoint:ep',
    pauseCfg: 'paused:config:cfg',
    circuit: 'circuit:ep',
    rate: 'rate:ep',
    domain: 'domain_inflight:h',
    conc: 'inflight:ep',
    limit: 'limit:ep',
    domainLimit: 'domain_limit:h',
    queued: 'endpoint_queued:ep',
  };
  type A = {
    now?: number;
    lane?: 'fast' | 'slow';
    circuit?: 0 | 1;
    probeInterval?: number;
    circuitTtl?: number;
    rate?: number;
    burst?: number;
    domainMax?: number;
    endpointMax?: number;
    lease?: number;
    id?: string;
    waited?: 0 | 1;
  };
  // Limits: initial 20, floor 1, tolerance 2, slow above 1 s, window 30 s, ceiling 1000.
  const shared = (a: A) => [
    a.circuit ?? 1,
    a.probeInterval ?? 5_000,
    a.circuitTtl ?? 600_000,
    a.rate ?? 0,
    a.burst ?? 0,
    a.endpointMax ?? 0,
    a.lease ?? 90_000,
    20,
    1,
    2,
    1000,
    30_000,
    1000,
  ];
  // Each request is its own webhook unless it names one.
  let seq = 0;
  const request = (a: A, ep = 'ep'): Req => ({
    ep,
    host: 'h',
    hostMax: a.domainMax ?? 0,
    cfg: 'cfg',
    now: a.now ?? NOW,
    args: [a.id ?? `wh_${++seq}`, (a.waited ? 1 : 0) + (a.lane === 'slow' ? 2 : 0)],
  });
  // A 'go' reply ends with what admission knew of the limit: those three are tested on their own.
  const short = (r: unknown) => (Array.isArray(r) && r[0] === 'go' ? r.slice(0, 4) : r);
  const admit = async (a: A = {}) => short(await one('admitDelivery', shared(a), request(a)));
  /** The endpoint (ep) measured slow: recent latency 2 s. */
  const slowEndpoint = () => redis.hset(K.limit, { limit: 20, min: 2000, lat: 2000, timeout_at: 0 });

  it("returns {'go', 0, 0, 0} and writes nothing when every guard is idle or off", async () => {
    expect(await admit()).toEqual(['go', 0, 0, 0]);
    expect(await redis.dbsize()).toBe(0);
  });

  it("with the canary key as ARGV[14]: {'rebuilding'} for every request and nothing written while it is absent; as usual once it is back", async () => {
    const canary = 'howk:system:initialized';
    const withCanary = async (n: number) =>
      runBatch(
        'admitDelivery',
        shared({ endpointMax: 5, domainMax: 5 }),
        Array.from({ length: n }, () => request({ domainMax: 5 })),
        canary,
      );
    expect(await withCanary(2)).toEqual([['rebuilding'], ['rebuilding']]);
    expect(await redis.dbsize()).toBe(0);
    await redis.set(canary, 'x');
    expect((await withCanary(2)).map(short)).toEqual([
      ['go', 0, 1, 1],
      ['go', 0, 1, 1],
    ]);
  });

  it("returns {'paused', scope} when paused:endpoint:{hash} or paused:config:{id} exists (paused or draining), endpoint first", async () => {
    await redis.set(K.pauseCfg, 'draining');
    expect(await admit()).toEqual(['paused', 'config']);
    await redis.set(K.pauseEp, 'paused');
    expect(await admit()).toEqual(['paused', 'endpoint']);
    // Nothing else is touched: no lease taken, no token taken.
    await admit({ rate: 4, burst: 3, domainMax: 5, endpointMax: 5 });
    expect((await redis.keys('*')).sort()).toEqual([K.pauseCfg, K.pauseEp].sort());
  });

  it('parks on an OPEN circuit before open_until, returning it as text, changing nothing', async () => {
    await redis.hset(K.circuit, { state: 'OPEN', open_until: NOW + 1_000, failures: 3 });
    expect(await admit({ now: NOW + 999 })).toEqual(['park', 'circuit_open', String(NOW + 1_000)]);
    expect(await redis.hgetall(K.circuit)).toEqual({ state: 'OPEN', open_until: String(NOW + 1_000), failures: '3' });
  });

  it('turns an OPEN circuit HALF_OPEN at open_until and admits a probe (probe_at = now, TTL ARGV[5])', async () => {
    await redis.hset(K.circuit, { state: 'OPEN', open_until: NOW, successes: 4 });
    expect(await admit({ circuitTtl: 120_000 })).toEqual(['go', 1, 0, 0]);
    expect(await redis.hgetall(K.circuit)).toMatchObject({ state: 'HALF_OPEN', successes: '0', probe_at: String(NOW) });
    const ttl = await redis.pttl(K.circuit);
    expect(ttl).toBeGreaterThan(110_000);
    expect(ttl).toBeLessThanOrEqual(120_000);
  });

  it('admits one HALF_OPEN probe per ARGV[4] ms, parking the rest until probe_at + interval', async () => {
    await redis.hset(K.circuit, { state: 'HALF_OPEN', probe_at: NOW });
    expect(await admit({ now: NOW + 1_999, probeInterval: 2_000 })).toEqual(['park', 'circuit_open', String(NOW + 2_000)]);
    expect(await admit({ now: NOW + 2_000, probeInterval: 2_000 })).toEqual(['go', 1, 0, 0]);
    expect(await redis.hget(K.circuit, 'probe_at')).toBe(String(NOW + 2_000));
    expect(await admit({ now: NOW + 2_000, probeInterval: 2_000 })).toEqual(['park', 'circuit_open', String(NOW + 4_000)]);
    // probe_at 0 (set after a probe success): the next probe goes at once.
    await redis.hset(K.circuit, 'probe_at', 0);
    expect(await admit({ now: NOW + 2_001, probeInterval: 2_000 })).toEqual(['go', 1, 0, 0]);
  });

  it('ignores the circuit hash when ARGV[3] is 0', async () => {
    await redis.hset(K.circuit, { state: 'OPEN', open_until: NOW + 60_000 });
    expect(await admit({ circuit: 0 })).toEqual(['go', 0, 0, 0]);
    expect(await redis.hget(K.circuit, 'state')).toBe('OPEN');
  });

  it('starts a bucket full (ARGV[7]) and takes a token per admission, with a TTL of burst/rate + 60 s', async () => {
    expect(await admit({ rate: 4, burst: 2 })).toEqual(['go', 0, 0, 0]);
    expect(await redis.hgetall(K.rate)).toEqual({ tokens: '1', at: String(NOW) });
    const ttl = await redis.pttl(K.rate);
    expect(ttl).toBeGreaterThan(60_000);
    expect(ttl).toBeLessThanOrEqual(60_500);
    expect(await admit({ rate: 4, burst: 2 })).toEqual(['go', 0, 0, 0]);
    expect(await redis.hget(K.rate, 'tokens')).toBe('0');
  });

  it("returns {'park', 'rate_limited', until} without taking a token, storing the refill", async () => {
    await redis.hset(K.rate, { tokens: 0, at: NOW });
    expect(await admit({ now: NOW + 125, rate: 4, burst: 2 })).toEqual(['park', 'rate_limited', String(NOW + 250)]);
    expect(await redis.hgetall(K.rate)).toEqual({ tokens: '0.5', at: String(NOW + 125) });
    expect(await admit({ now: NOW + 250, rate: 4, burst: 2 })).toEqual(['go', 0, 0, 0]);
    expect(await redis.hget(K.rate, 'tokens')).toBe('0');
  });

  it('caps the refill at burst and keeps fractional tokens exactly', async () => {
    await redis.hset(K.rate, { tokens: 0, at: NOW - 3_600_000 });
    expect(await admit({ rate: 4, burst: 2 })).toEqual(['go', 0, 0, 0]);
    expect(await redis.hget(K.rate, 'tokens')).toBe('1');
    // 0.1 + 0.2 is not 0.3 in binary: the stored text must round-trip the double exactly.
    await redis.hset(K.rate, { tokens: 0.1, at: NOW });
    await admit({ now: NOW + 20, rate: 10, burst: 5 });
    expect(Number(await redis.hget(K.rate, 'tokens'))).toBe(0.1 + (20 / 1000) * 10);
  });

  const counts = async () => [await redis.zcard(K.domain), await redis.zcard(K.conc)];

  it("at a limit diverts a slow endpoint (domain first), makes a fast one and the slow lane 'wait', taking no lease", async () => {
    await fill(K.domain, 3);
    await fill(K.conc, 9);
    expect(await admit({ domainMax: 3, endpointMax: 9 })).toEqual(['wait']);
    await slowEndpoint();
    expect(await admit({ domainMax: 3, endpointMax: 9 })).toEqual(['divert', 'domain_inflight']);
    expect(await admit({ domainMax: 3, endpointMax: 9, lane: 'slow' })).toEqual(['wait']);
    expect(await counts()).toEqual([3, 9]);
    expect(await admit({ domainMax: 4, endpointMax: 9 })).toEqual(['divert', 'endpoint_inflight']);
    expect(await counts()).toEqual([3, 9]);
  });

  it('takes a lease in both zsets on a go (member: the webhook id, score: now + ARGV[7], which is also their TTL), reporting which it took', async () => {
    expect(await admit({ domainMax: 3, endpointMax: 2, lease: 30_000, id: 'wh_a' })).toEqual(['go', 0, 1, 1]);
    expect(await admit({ domainMax: 3, endpointMax: 0, lease: 30_000, id: 'wh_b', now: NOW + 5 })).toEqual(['go', 0, 0, 1]);
    expect(await admit({ domainMax: 0, endpointMax: 2, lease: 30_000, id: 'wh_c' })).toEqual(['go', 0, 1, 0]);
    expect(await redis.zrange(K.domain, 0, -1, 'WITHSCORES')).toEqual(['wh_a', String(NOW + 30_000), 'wh_b', String(NOW + 30_005)]);
    expect(await redis.zrange(K.conc, 0, -1, 'WITHSCORES')).toEqual(['wh_a', String(NOW + 30_000), 'wh_c', String(NOW + 30_000)]);
    for (const k of [K.domain, K.conc]) {
      const ttl = await redis.pttl(k);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(30_000);
    }
    expect(await admit({ domainMax: 3, endpointMax: 2 })).toEqual(['wait']);
  });

  it('drops expired leases before counting: a lease never ended (its worker killed) stops counting at its end while other deliveries keep coming', async () => {
    const a: A = { endpointMax: 2, lease: 10_000 };
    expect(await admit({ ...a, id: 'wh_dead' })).toEqual(['go', 0, 1, 0]);
    // Traffic every second: one goes and completes, the next waits for the slot the dead lease holds.
    for (let t = 1000; t < 10_000; t += 1000) {
      expect(await admit({ ...a, now: NOW + t, id: `wh_${t}` }), `at +${t} ms`).toEqual(['go', 0, 1, 0]);
      expect(await admit({ ...a, now: NOW + t }), `at +${t} ms`).toEqual(['wait']);
      await runBatch('completeDelivery', [0, 3, 10_000, 30_000, 5_000, 2, 600_000, 20, 1, 2, 1000, 30_000, 1000, 200], [completion({ now: NOW + t, ep: 1, id: `wh_${t}` })]);
    }
    expect(await redis.zrange(K.conc, 0, -1)).toEqual(['wh_dead']);
    expect(await admit({ ...a, now: NOW + 9_999, id: 'wh_x' })).toEqual(['go', 0, 1, 0]);
    expect(await admit({ ...a, now: NOW + 9_999 })).toEqual(['wait']);
    // now + lease: the dead lease is over, whatever refreshed the zset meanwhile.
    expect(await admit({ ...a, now: NOW + 10_000, id: 'wh_y' })).toEqual(['go', 0, 1, 0]);
    expect(await redis.zscore(K.conc, 'wh_dead')).toBeNull();
    expect(await redis.zrange(K.conc, 0, -1)).toEqual(['wh_x', 'wh_y']);
  });

  it('does the same for the host: an expired lease in domain_inflight stops counting', async () => {
    await fill(K.domain, 2, NOW + 500);
    expect(await admit({ domainMax: 2, now: NOW + 499 })).toEqual(['wait']);
    expect(await admit({ domainMax: 2, now: NOW + 500 })).toEqual(['go', 0, 0, 1]);
    expect(await redis.zcard(K.domain)).toBe(1);
  });

  it('reads the adaptive limit: the fast lane admits min(limit, ARGV[6]) and the go reply carries both and the latency', async () => {
    await redis.hset(K.limit, { limit: '3.75', min: 4, lat: 6.5, timeout_at: 0 });
    expect(await one('admitDelivery', shared({ endpointMax: 50 }), request({ endpointMax: 50 }))).toEqual(['go', 0, 1, 0, 3, '3.75', '6.5']);
    await admit({ endpointMax: 50 });
    await admit({ endpointMax: 50 });
    expect(await admit({ endpointMax: 50 })).toEqual(['wait']);
    // A host's limit is read the same way, under its ceiling.
    await redis.hset(K.domainLimit, { limit: '1.5', min: 4, lat: 6.5, timeout_at: 0 });
    expect(await admit({ domainMax: 10, lane: 'slow' })).toEqual(['go', 0, 0, 1]);
    expect(await admit({ domainMax: 10, lane: 'slow' })).toEqual(['wait']);
  });

  it('keeps a fast-lane waiter in endpoint_queued until it gets another answer', async () => {
    await fill(K.conc, 1);
    expect(await admit({ endpointMax: 1, id: 'wh_1' })).toEqual(['wait']);
    expect(await admit({ endpointMax: 1, id: 'wh_2', now: NOW + 5 })).toEqual(['wait']);
    expect(await redis.zrange(K.queued, 0, -1, 'WITHSCORES')).toEqual(['wh_1', String(NOW), 'wh_2', String(NOW + 5)]);
    await redis.del(K.conc);
    expect(await admit({ endpointMax: 1, id: 'wh_1', waited: 1 })).toEqual(['go', 0, 1, 0]);
    expect(await redis.zrange(K.queued, 0, -1)).toEqual(['wh_2']);
  });

  it("returns {'recovered'} to the slow lane while the endpoint is not slow, else delivers it counted past the limit", async () => {
    expect(await admit({ lane: 'slow', endpointMax: 4 })).toEqual(['recovered']);
    await fill(K.conc, 7);
    expect(await admit({ lane: 'slow', endpointMax: 4 })).toEqual(['recovered']);
    expect(await redis.zcard(K.conc)).toBe(7);
    await slowEndpoint();
    expect(await admit({ lane: 'slow', endpointMax: 4 })).toEqual(['go', 0, 1, 0]);
    expect(await redis.zcard(K.conc)).toBe(8);
    // A timeout within the window (ARGV[12]) is slow too, and no longer after it.
    await redis.hset(K.limit, { lat: 10, timeout_at: NOW - 29_999 });
    expect(await admit({ lane: 'slow', endpointMax: 4 })).toEqual(['go', 0, 1, 0]);
    expect(await admit({ lane: 'slow', endpointMax: 4, now: NOW + 1 })).toEqual(['recovered']);
    // Without an endpoint limit the slow lane just delivers.
    expect(await admit({ lane: 'slow', endpointMax: 0 })).toEqual(['go', 0, 0, 0]);
  });

  it('decides several requests in one call in order, each seeing what the ones before it counted', async () => {
    await redis.set('paused:endpoint:ep2', 'paused');
    await slowEndpoint();
    const a: A = { endpointMax: 2, domainMax: 0 };
    const replies = await runBatch('admitDelivery', shared(a), [request(a), request(a), request(a, 'ep2'), request(a), request({ ...a, lane: 'slow' })]);
    expect(replies.map(short)).toEqual([
      ['go', 0, 1, 0],
      ['go', 0, 1, 0],
      ['paused', 'endpoint'],
      ['divert', 'endpoint_inflight'],
      ['go', 0, 1, 0],
    ]);
    expect(await redis.zcard(K.conc)).toBe(3);
    // Per-request domain limits: the host's count rises only for requests that name one.
    const hosts = await runBatch('admitDelivery', shared({}), [request({ domainMax: 1 }), request({ domainMax: 1 }), request({ domainMax: 0 })]);
    expect(hosts.map(short)).toEqual([['go', 0, 0, 1], ['wait'], ['go', 0, 0, 0]]);
    expect(await redis.zcard(K.domain)).toBe(1);
  });

  it('replies with every answer in one flat list, each its kind then its fields', async () => {
    await redis.set('paused:endpoint:ep2', 'paused');
    const a: A = { endpointMax: 0, domainMax: 1 };
    const raw = await redis.eval(BATCH_SCRIPTS.admitDelivery, 0, ...shared(a), '', ...ADMIT_PREFIXES, ...layout([request(a), request(a, 'ep2'), request(a)], true));
    expect(raw).toEqual(['go', 0, 0, 1, 0, '0', '0', 'paused', 'endpoint', 'wait']);
  });

  it('takes the probe slot and a token even when the in-flight limits then hold it back', async () => {
    await redis.hset(K.circuit, { state: 'HALF_OPEN', probe_at: 0 });
    await fill(K.conc, 5);
    expect(await admit({ rate: 4, burst: 2, endpointMax: 5 })).toEqual(['wait']);
    expect(await redis.hget(K.circuit, 'probe_at')).toBe(String(NOW));
    expect(await redis.hget(K.rate, 'tokens')).toBe('1');
  });
});

describe('completeDelivery.lua', () => {
  const K = {
    circuit: 'circuit:ep',
    conc: 'inflight:ep',
    domain: 'domain_inflight:h',
    errors: 'endpoint_errors:ep',
    limit: 'limit:ep',
    domainLimit: 'domain_limit:h',
    latency: 'endpoint_latency:ep',
  };
  const CB = { threshold: 3, window: 10_000, recovery: 30_000, probeInterval: 5_000, successes: 2 };
  type C = {
    now?: number;
    outcome?: 'success' | 'failure' | 'neutral';
    probe?: 0 | 1;
    ep?: 0 | 1;
    dom?: 0 | 1;
    circuit?: 0 | 1;
    ttl?: number;
    error?: string;
    sample?: LimitSample;
    domainMax?: number;
    id?: string;
  };
  // Limits as in core/policy: LIMITS (initial 20, floor 1, tolerance 2, 1 s, 30 s, ceiling 1000); 200 samples kept.
  const LIMITS = { initial: 20, floor: 1, ceiling: 1000, tolerance: 2, slowThresholdMs: 1000, windowMs: 30_000 };
  const shared = (c: C) => [c.circuit ?? 1, CB.threshold, CB.window, CB.recovery, CB.probeInterval, CB.successes, c.ttl ?? 600_000, 20, 1, 2, 1000, 30_000, 1000, 200];
  const request = (c: C): Req => completion({ ...c, now: c.now ?? NOW });
  const complete = (c: C = {}) => one('completeDelivery', shared(c), request(c));

  it('applies several completions in one call in order and returns the state after each', async () => {
    await fill(K.conc, 3);
    const replies = await runBatch('completeDelivery', shared({}), [
      request({ outcome: 'failure', ep: 1, now: NOW, id: 'busy0' }),
      request({ outcome: 'failure', ep: 1, now: NOW + 1, id: 'busy1' }),
      request({ outcome: 'failure', ep: 1, now: NOW + 2, error: 'HTTP 503', id: 'busy2' }),
      request({ outcome: 'success', now: NOW + 3 }),
    ]);
    // The third opened the circuit (a transition: {state, open_until, opened_count}); the fourth, late, changed nothing.
    expect(replies).toEqual(['CLOSED', 'CLOSED', ['OPEN', String(NOW + 2 + CB.recovery), 1], 'OPEN']);
    expect(await redis.zcard(K.conc)).toBe(0);
    expect(await redis.hget(K.circuit, 'open_until')).toBe(String(NOW + 2 + CB.recovery));
    expect(await redis.llen(K.errors)).toBe(1);
  });

  it('replies with one code per completion, then a triple per completion that moved the circuit', async () => {
    const raw = await redis.eval(
      BATCH_SCRIPTS.completeDelivery,
      0,
      ...shared({}),
      ...COMPLETE_PREFIXES,
      ...layout(
        [
          request({ outcome: 'failure', now: NOW, id: 'a' }),
          request({ outcome: 'failure', now: NOW + 1, id: 'b' }),
          request({ outcome: 'failure', now: NOW + 2, id: 'c' }),
          request({ outcome: 'success', now: NOW + 3, id: 'd' }),
        ],
        false,
      ),
    );
    expect(raw).toEqual(['CCTO', 'OPEN', String(NOW + 2 + CB.recovery), 1]);
  });

  it('ends only the leases flagged counted (endpoint 2, domain 4), by the webhook id; ending one twice or one never taken changes nothing', async () => {
    await fill(K.conc, 3);
    await fill(K.domain, 2);
    await redis.pexpire(K.conc, 60_000);
    await complete({ ep: 1, id: 'busy2' });
    expect([await redis.zrange(K.conc, 0, -1), await redis.zcard(K.domain)]).toEqual([['busy0', 'busy1'], 2]);
    await complete({ ep: 1, dom: 1, id: 'busy1' });
    await complete({ ep: 1, dom: 1, id: 'busy1' });
    await complete({ ep: 1, dom: 1, id: 'wh_never' });
    expect(await redis.zrange(K.conc, 0, -1)).toEqual(['busy0']);
    expect(await redis.zrange(K.domain, 0, -1)).toEqual(['busy0']);
    expect(await redis.pttl(K.conc)).toBeGreaterThan(0);
    // A zset that is gone (expired) stays gone.
    await redis.del(K.conc);
    await complete({ ep: 1, id: 'busy0' });
    expect(await redis.exists(K.conc)).toBe(0);
  });

  it('feeds the limit the leases in force: an expired one is not counted', async () => {
    // Ten leases, eight of them expired at NOW: the sample at 2 in flight of a limit of 20 does not grow it (less than half in use).
    await fill(K.conc, 2);
    await redis.zadd(K.conc, ...Array.from({ length: 8 }, (_, i) => [NOW, `dead${i}`]).flat());
    await complete({ ep: 1, id: 'busy0', sample: { ms: 10, drop: false, timeout: false } });
    const at2 = recordSample(freshLimit(LIMITS), { ms: 10, drop: false, timeout: false }, 2, NOW, LIMITS);
    expect(Number(await redis.hget(K.limit, 'limit'))).toBe(at2.limit);
    expect(at2.limit).not.toBe(recordSample(freshLimit(LIMITS), { ms: 10, drop: false, timeout: false }, 10, NOW, LIMITS).limit);
  });

  it('pushes {at, error} to the front of the error list, keeping 10, with the TTL ARGV[12]', async () => {
    for (let i = 0; i < 12; i++) await complete({ now: NOW + i, outcome: 'neutral', error: `boom ${i}`, ttl: 50_000 });
    await complete({ now: NOW + 99, error: '' });
    const list = (await redis.lrange(K.errors, 0, -1)).map((e) => JSON.parse(e) as unknown);
    expect(list).toEqual(Array.from({ length: 10 }, (_, k) => ({ at: new Date(NOW + 11 - k).toISOString(), error: `boom ${11 - k}` })));
    const ttl = await redis.pttl(K.errors);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(50_000);
  });

  it("returns 'CLOSED' and creates no circuit when ARGV[6] is 0", async () => {
    expect(await complete({ outcome: 'failure', circuit: 0 })).toBe('CLOSED');
    await redis.hset(K.circuit, { state: 'HALF_OPEN', probe_at: NOW });
    expect(await complete({ outcome: 'failure', probe: 1, circuit: 0 })).toBe('CLOSED');
    expect(await redis.hget(K.circuit, 'state')).toBe('HALF_OPEN');
  });

  it('counts failures in a window and opens at the threshold (open_until, opened_count, TTL)', async () => {
    expect(await complete({ outcome: 'failure', now: NOW })).toBe('CLOSED');
    expect(await redis.hgetall(K.circuit)).toEqual({ state: 'CLOSED', failures: '1', window_start: String(NOW) });
    expect(await complete({ outcome: 'failure', now: NOW + 5_000 })).toBe('CLOSED');
    expect(await complete({ outcome: 'failure', now: NOW + 10_000, ttl: 70_000 })).toEqual(['OPEN', String(NOW + 10_000 + CB.recovery), 1]);
    expect(await redis.hgetall(K.circuit)).toEqual({ state: 'OPEN', failures: '3', window_start: String(NOW), open_until: String(NOW + 10_000 + CB.recovery), opened_count: '1' });
    const ttl = await redis.pttl(K.circuit);
    expect(ttl).toBeGreaterThan(60_000);
    expect(ttl).toBeLessThanOrEqual(70_000);
  });

  it('starts a new window when a failure comes more than failure_window after the window start', async () => {
    await complete({ outcome: 'failure', now: NOW });
    await complete({ outcome: 'failure', now: NOW + 1 });
    expect(await complete({ outcome: 'failure', now: NOW + 10_001 })).toBe('CLOSED');
    expect(await redis.hgetall(K.circuit)).toMatchObject({ failures: '1', window_start: String(NOW + 10_001) });
  });

  it('resets the failures on a success while CLOSED, and writes nothing for a success on a fresh circuit', async () => {
    expect(await complete({ outcome: 'success' })).toBe('CLOSED');
    expect(await redis.exists(K.circuit)).toBe(0);
    await complete({ outcome: 'failure' });
    await complete({ outcome: 'failure' });
    expect(await complete({ outcome: 'success' })).toBe('CLOSED');
    expect(await redis.hget(K.circuit, 'failures')).toBe('0');
  });

  it('changes nothing on a neutral outcome and returns the current state', async () => {
    await redis.hset(K.circuit, { state: 'HALF_OPEN', probe_at: NOW, successes: 1 });
    expect(await complete({ outcome: 'neutral', probe: 1 })).toBe('HALF_OPEN');
    expect(await redis.hgetall(K.circuit)).toEqual({ state: 'HALF_OPEN', probe_at: String(NOW), successes: '1' });
    await redis.del(K.circuit);
    expect(await complete({ outcome: 'neutral' })).toBe('CLOSED');
    expect(await redis.exists(K.circuit)).toBe(0);
  });

  it('ignores every outcome while OPEN, probe or not', async () => {
    const open = { state: 'OPEN', open_until: String(NOW + 30_000), failures: '3', opened_count: '1' };
    await redis.hset(K.circuit, open);
    for (const outcome of ['success', 'failure'] as const) {
      for (const probe of [0, 1] as const) expect(await complete({ outcome, probe })).toBe('OPEN');
    }
    expect(await redis.hgetall(K.circuit)).toEqual(open);
  });

  it('ignores non-probe answers while HALF_OPEN', async () => {
    const half = { state: 'HALF_OPEN', probe_at: String(NOW), successes: '0' };
    await redis.hset(K.circuit, half);
    expect(await complete({ outcome: 'success' })).toBe('HALF_OPEN');
    expect(await complete({ outcome: 'failure' })).toBe('HALF_OPEN');
    expect(await redis.hgetall(K.circuit)).toEqual(half);
  });

  it('re-opens on a failed probe until now + probe_interval, clearing successes', async () => {
    await redis.hset(K.circuit, { state: 'HALF_OPEN', probe_at: NOW, successes: 1, opened_count: 2 });
    expect(await complete({ outcome: 'failure', probe: 1, now: NOW + 300 })).toEqual(['OPEN', String(NOW + 300 + CB.probeInterval), 2]);
    expect(await redis.hgetall(K.circuit)).toMatchObject({ state: 'OPEN', open_until: String(NOW + 300 + CB.probeInterval), successes: '0', opened_count: '2' });
  });

  it('counts a probe success (probe_at 0: the next probe at once) and closes at success_threshold keeping opened_count', async () => {
    await redis.hset(K.circuit, { state: 'HALF_OPEN', probe_at: NOW, successes: 0, failures: 3, window_start: NOW - 5_000, open_until: NOW, opened_count: 2 });
    expect(await complete({ outcome: 'success', probe: 1 })).toBe('HALF_OPEN');
    expect(await redis.hgetall(K.circuit)).toMatchObject({ state: 'HALF_OPEN', successes: '1', probe_at: '0' });
    expect(await complete({ outcome: 'success', probe: 1, ttl: 80_000 })).toEqual(['CLOSED', '0', 2]);
    expect(await redis.hgetall(K.circuit)).toEqual({ state: 'CLOSED', opened_count: '2' });
    expect(await redis.pttl(K.circuit)).toBeGreaterThan(70_000);
  });
});

// The pause scripts (holdPaused, pauseScope, resumeScope, takeHeld, dropHeld): redis-pause-lua.test.ts.

describe('adaptiveLimit.lua (through completeDelivery.lua): the same doubles as core/policy/adaptive-limit.ts', () => {
  const K = ['circuit:ep', 'inflight:ep', 'domain_inflight:h', 'endpoint_errors:ep', 'limit:ep', 'domain_limit:h', 'endpoint_latency:ep'];
  const shared = (p: (typeof VECTORS)[string]['params']) => [
    0,
    3,
    10_000,
    30_000,
    5_000,
    2,
    600_000,
    p.initial,
    p.floor,
    p.tolerance,
    p.slowThresholdMs,
    p.windowMs,
    p.ceiling,
    200,
  ];
  const state = async (key: string): Promise<LimitState> => {
    const h = await redis.hgetall(key);
    return { limit: Number(h.limit), minMs: Number(h.min), latMs: Number(h.lat), timeoutAt: Number(h.timeout_at) };
  };

  it.each(Object.keys(VECTORS))('%s', async (name) => {
    const v = VECTORS[name]!;
    let model = freshLimit(v.params);
    let hostModel = freshLimit({ ...v.params, ceiling: 50 });
    for (const [i, x] of v.steps.entries()) {
      // The leases as they stand when the attempt ends (its own, 'wh', among them).
      const leases = Array.from({ length: x.inflight }, (_, k) => [x.at + 60_000, k ? `other${k}` : 'wh']).flat();
      for (const k of [K[1]!, K[2]!]) {
        await redis.del(k);
        if (leases.length) await redis.zadd(k, ...leases);
      }
      await runBatch('completeDelivery', shared(v.params), [completion({ now: x.at, outcome: x.drop ? 'failure' : 'success', ep: 1, dom: 1, sample: x, domainMax: 50, id: 'wh' })]);
      model = recordSample(model, x, x.inflight, x.at, v.params);
      hostModel = recordSample(hostModel, x, x.inflight, x.at, { ...v.params, ceiling: 50 });
      expect(await state(K[4]!), `${name}, step ${i}`).toEqual(model);
      expect(await state(K[5]!), `${name}, step ${i} (host)`).toEqual(hostModel);
    }
    expect(await redis.zcard(K[1]!)).toBe(Math.max(0, v.steps[v.steps.length - 1]!.inflight - 1));
  });
  // One call carrying every step (a worker's batch of completions of one endpoint): the state
  // is read once and written once, and must come out exactly as the steps one at a time.
  it.each(Object.keys(VECTORS))('%s, all steps in one call', async (name) => {
    const v = VECTORS[name]!;
    let model = freshLimit(v.params);
    // n deliveries in flight (one lease each); each completion ends its own, in turn.
    const n = v.steps.length;
    const until = Math.max(...v.steps.map((x) => x.at)) + 60_000;
    await redis.del(K[1]!);
    await redis.zadd(K[1]!, ...v.steps.flatMap((_, i) => [until, `w${i}`]));
    const reqs: Req[] = [];
    for (const [i, x] of v.steps.entries()) {
      reqs.push(completion({ now: x.at, outcome: x.drop ? 'failure' : 'success', ep: 1, sample: x, domainMax: 50, id: `w${i}` }));
      model = recordSample(model, x, n - i, x.at, v.params);
    }
    await runBatch('completeDelivery', shared(v.params), reqs);
    expect(await state(K[4]!)).toEqual(model);
    expect(await redis.zcard(K[1]!)).toBe(0);
    // The samples of the call, newest first, as one LPUSH per completion would leave them.
    const kept = v.steps
      .filter((x) => !x.drop || x.timeout)
      .map((x) => `${x.at}:${x.ms}`)
      .reverse()
      .slice(0, 200);
    expect(await redis.lrange(K[6]!, 0, -1)).toEqual(kept);
  });
});
