import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { BATCH_SCRIPTS } from '../../workers/redis/scripts';
import { useFlushedRedis } from '../helpers/flushed-redis';
import { ADMIT_PREFIXES, NOW, completion, guardScriptCalls, layout, type Req } from '../helpers/guard-script-calls';

// admitDelivery.lua against real Redis, called directly by its header contract (KEYS, ARGV,
// returns), independent of RedisGuards around it. A db of its own (useFlushedRedis), flushed
// before each test. completeDelivery.lua and adaptiveLimit.lua: redis-guards-lua.test.ts.
let redis: Redis;
useFlushedRedis((r) => (redis = r));
const { runBatch, one, fill } = guardScriptCalls(() => redis);

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
