import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { UnavailableError } from '../../core/errors/errors';
import { createRedis } from '../../workers/redis/client';
import { RedisGuards } from '../../workers/redis/guards';
import { flushOwnDb, useRedisDb } from '../helpers/redis-db';
import { CB, EP, HOST, T0, completion, guardsContract, params, req, type MakeGuards } from './guards.contract';
import { guardsBatchContract } from './guards.contract-batch';
import { guardsGaugesContract } from './guards.contract-gauges';
import { guardsPauseContract } from './guards.contract-pause';
import { guardsRestoreContract } from './guards.contract-restore';

// Real Redis from REDIS_URL, a db of its own (useRedisDb), flushed before each test.
const url = process.env.REDIS_URL;
if (!url) throw new Error('REDIS_URL is not set: the Redis Guards contract needs a real Redis (scripts/infra/redis.sh start prints one)');
const db = useRedisDb();

const flush = async () => {
  const admin = createRedis(url, { db: db() });
  try {
    await flushOwnDb(admin, db());
  } finally {
    await admin.quit();
  }
};

const make: MakeGuards = async () => {
  await flush();
  // Two connections: the race tests really have two clients admitting.
  const a = createRedis(url, { db: db() });
  const b = createRedis(url, { db: db() });
  return {
    guards: new RedisGuards(a),
    peer: new RedisGuards(b),
    cleanup: async () => {
      await Promise.all([a.quit(), b.quit()]);
    },
  };
};
guardsContract('redis', make);
guardsPauseContract('redis', make);
guardsRestoreContract('redis', make);
guardsGaugesContract('redis', make);
guardsBatchContract('redis', make);

describe('RedisGuards: keys and TTLs', () => {
  let redis: Redis;
  let guards: RedisGuards;
  beforeAll(() => {
    redis = createRedis(url, { db: db() });
    guards = new RedisGuards(redis);
  });
  afterAll(async () => {
    await redis.quit();
  });
  beforeEach(flush);

  it('with requireCanary, admits nothing (wait) and writes nothing while the canary is missing (Redis lost, not rebuilt yet)', async () => {
    const p = params({ requireCanary: true, maxInflightPerEndpoint: 5 });
    expect(await guards.admit([req({ id: 'wh_1' }), req({ id: 'wh_2' })], p)).toEqual([{ kind: 'wait' }, { kind: 'wait' }]);
    expect(await redis.dbsize()).toBe(0);
    await redis.set(keys.canary(), 'x');
    expect(await guards.admit([req({ id: 'wh_1' })], p)).toMatchObject([{ kind: 'go' }]);
  });

  it('keeps in-flight leases in zsets (member: webhook id, score: admission + lease) whose TTL is the lease, ended by completion', async () => {
    const p = params({ maxInflightPerEndpoint: 5, maxInflightPerDomain: () => 5, inflightLeaseMs: 60_000 });
    const [a] = await guards.admit([req({ id: 'wh_1' }), req({ id: 'wh_2', now: T0 + 7 })], p);
    expect(a).toMatchObject({ kind: 'go', counted: { endpoint: true, domain: true } });
    for (const k of [keys.inflight(EP), keys.domainInflight(HOST)]) {
      expect(await redis.zrange(k, 0, -1, 'WITHSCORES')).toEqual(['wh_1', String(T0 + 60_000), 'wh_2', String(T0 + 60_007)]);
      const ttl = await redis.pttl(k);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
    await guards.complete([completion({ id: 'wh_1', outcome: 'success', counted: { endpoint: true, domain: true } })], p);
    for (const k of [keys.inflight(EP), keys.domainInflight(HOST)]) expect(await redis.zrange(k, 0, -1)).toEqual(['wh_2']);
  });

  it('forgets a leaked in-flight delivery once its lease is over, and the idle zset goes with its TTL', async () => {
    const p = params({ maxInflightPerEndpoint: 1, inflightLeaseMs: 150 });
    const now = Date.now();
    expect(await guards.admit([req({ now })], p)).toMatchObject([{ kind: 'go' }]);
    expect(await guards.admit([req({ now })], p)).toEqual([{ kind: 'wait' }]);
    // The completion never comes (a crashed worker): the lease runs out, then the key expires.
    expect(await guards.admit([req({ now: now + 150 })], p)).toMatchObject([{ kind: 'go' }]);
    await new Promise((r) => setTimeout(r, 300));
    expect(await redis.exists(keys.inflight(EP))).toBe(0);
  });

  it('is not disturbed by the counters of an earlier version (plain strings under concurrency:<hash>, domain_concurrency:<host>)', async () => {
    await redis.set(`concurrency:${EP}`, '7', 'PX', 120_000);
    await redis.set(`domain_concurrency:${HOST}`, '7', 'PX', 120_000);
    const p = params({ maxInflightPerEndpoint: 2, maxInflightPerDomain: () => 5 });
    expect(await guards.admit([req(), req(), req()], p)).toMatchObject([{ kind: 'go' }, { kind: 'go' }, { kind: 'wait' }]);
    expect((await guards.endpoint(EP, T0, p)).inflight).toBe(2);
    await guards.complete([completion({ outcome: 'success', counted: { endpoint: true, domain: true } })], p);
    // Left alone, to their own TTL.
    expect(await redis.get(`concurrency:${EP}`)).toBe('7');
  });

  it('gives circuit state, the rate bucket and the error list a TTL', async () => {
    const p = params({ rate: 4, burst: 3, circuitTtlMs: 120_000 });
    await guards.admit([req()], p);
    await guards.complete(
      Array.from({ length: CB.failure_threshold }, () => completion({ outcome: 'failure', error: 'HTTP 502' })),
      p,
    );
    for (const k of [keys.circuit(EP), keys.endpointErrors(EP)]) {
      const ttl = await redis.pttl(k);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(120_000);
    }
    expect(await redis.pttl(keys.rateBucket(EP))).toBeGreaterThan(0);
    expect(await redis.hget(keys.circuit(EP), 'state')).toBe('OPEN');
    expect(await guards.admit([req({ now: T0 + CB.recovery_timeout })], p)).toMatchObject([{ kind: 'go', probe: true }]);
    expect(await redis.pttl(keys.circuit(EP))).toBeGreaterThan(0);
  });

  it('gives the adaptive limit, the latency samples and the queue a TTL', async () => {
    const p = params({ maxInflightPerEndpoint: 1, maxInflightPerDomain: () => 5, circuitTtlMs: 120_000 });
    await guards.admit([req({ id: 'wh_1' })], p);
    await guards.admit([req({ id: 'wh_q' })], p);
    await guards.complete([completion({ id: 'wh_1', outcome: 'success', counted: { endpoint: true, domain: true }, sample: { ms: 12, drop: false, timeout: false } })], p);
    for (const k of [keys.endpointLimit(EP), keys.domainLimit(HOST), keys.endpointLatency(EP), keys.endpointQueued(EP)]) {
      const ttl = await redis.pttl(k);
      expect(ttl, k).toBeGreaterThan(0);
      expect(ttl, k).toBeLessThanOrEqual(120_000);
    }
  });

  it("keeps an endpoint's limit state and samples while completions keep coming, past its TTL, and lets them go once idle", async () => {
    const p = params({ maxInflightPerEndpoint: 5, maxInflightPerDomain: () => 5, circuitTtlMs: 1600 });
    const both = { endpoint: true, domain: true };
    const kept = [keys.endpointLimit(EP), keys.domainLimit(HOST), keys.endpointLatency(EP)];
    const started = Date.now();
    let calls = 0;
    for (let i = 0; Date.now() - started < 2600; i = ++calls) {
      await guards.complete([completion({ id: `wh_${i}`, now: T0 + i, outcome: 'success', counted: both, sample: { ms: 12, drop: false, timeout: false } })], p);
      for (const k of kept) expect(await redis.exists(k), `${k} after ${i + 1} calls`).toBe(1);
      await new Promise((r) => setTimeout(r, 60));
    }
    // Nothing was lost on the way: every call's sample is still there.
    expect((await guards.endpoint(EP, T0 + calls, p)).concurrency.latency_ms.samples).toBe(calls);
    for (const k of kept) expect(await redis.pttl(k)).toBeLessThanOrEqual(1600);
    await new Promise((r) => setTimeout(r, 1700));
    for (const k of kept) expect(await redis.exists(k), k).toBe(0);
  });

  it('gives the latency samples a TTL when the first comes after its limit state was written (a drop brings no sample)', async () => {
    const p = params({ maxInflightPerEndpoint: 5, circuitTtlMs: 120_000 });
    const counted = { endpoint: true, domain: false };
    await guards.complete([completion({ id: 'wh_1', outcome: 'failure', counted, sample: { ms: 30, drop: true, timeout: false } })], p);
    expect(await redis.exists(keys.endpointLatency(EP))).toBe(0);
    await guards.complete([completion({ id: 'wh_2', now: T0 + 1, outcome: 'success', counted, sample: { ms: 12, drop: false, timeout: false } })], p);
    const ttl = await redis.pttl(keys.endpointLatency(EP));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(120_000);
  });

  it('fails with UnavailableError when Redis cannot be reached (the caller then fails closed or open)', async () => {
    const down = createRedis('redis://127.0.0.1:1', { connectTimeoutMs: 200, commandTimeoutMs: 500 });
    down.on('error', () => {});
    try {
      const g = new RedisGuards(down);
      await expect(g.admit([req()], params())).rejects.toBeInstanceOf(UnavailableError);
      await expect(g.complete([completion({ outcome: 'failure' })], params())).rejects.toBeInstanceOf(UnavailableError);
      await expect(g.holdPaused({ kind: 'config', id: 'c' }, 'x')).rejects.toBeInstanceOf(UnavailableError);
    } finally {
      down.disconnect();
    }
  });
});
