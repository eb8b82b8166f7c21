import { freePort } from '../helpers/procs';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { HISTORY_LIMIT } from '../../core/domain/status';
import { hourBucket } from '../../core/domain/time';
import { UnavailableError } from '../../core/errors/errors';
import type { StatusWrite } from '../../core/ports/hot-state';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { requireEnv } from '../helpers/env';
import { useFlushedRedis } from '../helpers/flushed-redis';
import { DEFAULT_TTLS, attemptOf, ns, statusOf } from '../contract/hot-state.fixtures';
import { retryKeyOf } from '../helpers/retry-keys';

// What the shared contract cannot see: the Redis key layout (docs/ARCHITECTURE.md, Redis
// keys) and TTLs, the script cache going away, and how failures surface. A db of its own (useFlushedRedis), flushed before each test.
const url = requireEnv('REDIS_URL');

let admin: Redis;
let state: RedisHotState;
const db = useFlushedRedis((r) => (admin = r));
beforeAll(() => {
  state = new RedisHotState(createRedis(url, { db: db() }), DEFAULT_TTLS);
});
afterAll(async () => {
  await state.close();
});

describe('RedisHotState key layout', () => {
  it('writes status, history, retry, stats and idempotency keys in the HOWK shapes, each with its TTL', async () => {
    const now = Date.now();
    const status = statusOf('wh_k', ns(now, 42));
    await state.apply({
      statuses: [{ status, attempt: attemptOf(0) }],
      retries: [{ id: 'wh_k', dueAt: now + 1_000, data: '{"id":"wh_k"}' }],
      stats: { at: now, counts: { retried: 1 }, endpoints: ['hash1'] },
    });
    await state.claimIdempotency([{ configId: 'cfg_1', key: 'order-7', webhookId: 'wh_k' }], 60_000);

    // Besides data, ts and the history (h), the hash may carry bookkeeping fields (index, layout).
    expect(await admin.hgetall(keys.status('wh_k'))).toMatchObject({ data: JSON.stringify(status), ts: ns(now, 42), h: JSON.stringify(attemptOf(0)) });
    expect(await admin.exists(keys.statusHistory('wh_k'))).toBe(0);
    expect(await admin.zscore(retryKeyOf('wh_k'), 'wh_k')).toBe(String(now + 1_000));
    expect(await admin.get(keys.retryData('wh_k'))).toBe('{"id":"wh_k"}');
    expect(await admin.get(keys.stats('retried', hourBucket(now)))).toBe('1');
    expect(await admin.pfcount(keys.endpointsHll(hourBucket(now)))).toBe(1);
    expect(await admin.get('idempotency:{cfg_1}:order-7')).toBe('wh_k');
    expect(await admin.exists('idempotency:cfg_1:order-7')).toBe(0);

    const ttl = async (k: string) => admin.pttl(k);
    const within = (got: number, max: number) => expect(got > max - 60_000 && got <= max).toBe(true);
    within(await ttl(keys.status('wh_k')), DEFAULT_TTLS.status_ttl);
    within(await ttl(keys.retryData('wh_k')), DEFAULT_TTLS.retry_data_ttl);
    within(await ttl(keys.stats('retried', hourBucket(now))), DEFAULT_TTLS.stats_ttl);
    within(await ttl(keys.endpointsHll(hourBucket(now))), DEFAULT_TTLS.stats_ttl);
    within(await ttl(keys.idempotency('cfg_1', 'order-7')), 60_000);
    expect(await ttl(retryKeyOf('wh_k'))).toBe(-1);
  });
});

describe('RedisHotState histories written by workers not yet upgraded (a list of their own)', () => {
  // What such a worker writes for one outcome: the status hash's data and ts (newer only),
  // its attempt pushed to status_history:<id>, both TTLs refreshed.
  const oldWrite = async (status: ReturnType<typeof statusOf>, attempt: ReturnType<typeof attemptOf>) => {
    const key = keys.status(status.webhook_id);
    const list = keys.statusHistory(status.webhook_id);
    await admin.hset(key, 'data', JSON.stringify(status), 'ts', status.updated_at_ns);
    await admin.rpush(list, JSON.stringify(attempt));
    for (const k of [key, list]) await admin.pexpire(k, DEFAULT_TTLS.status_ttl);
  };
  const attempts = async (id: string) => (await state.getStatus(id))?.history.map((a) => a.attempt);

  it('reads the attempts of both, in time order, whichever wrote first', async () => {
    const now = Date.now();
    await oldWrite(statusOf('wh_a', ns(now, 1), { state: 'retrying' }), attemptOf(0));
    await state.apply({ statuses: [{ status: statusOf('wh_a', ns(now, 2), { state: 'retrying' }), attempt: attemptOf(1) }] });
    expect(await attempts('wh_a')).toEqual([0, 1]);
    // New, then old, then new: still in time order.
    await state.apply({ statuses: [{ status: statusOf('wh_b', ns(now, 1), { state: 'retrying' }), attempt: attemptOf(0) }] });
    await oldWrite(statusOf('wh_b', ns(now, 2), { state: 'retrying' }), attemptOf(1));
    await state.apply({ statuses: [{ status: statusOf('wh_b', ns(now, 3), { state: 'delivered' }), attempt: attemptOf(2, { outcome: 'delivered' }) }] });
    const got = await state.getStatus('wh_b');
    expect(got).toMatchObject({ state: 'delivered' });
    expect(got?.history).toEqual([attemptOf(0), attemptOf(1), attemptOf(2, { outcome: 'delivered' })]);
  });

  it('keeps the last HISTORY_LIMIT attempts of both together, and the old list lives as long as the status', async () => {
    const now = Date.now();
    for (let i = 0; i < 15; i++) await oldWrite(statusOf('wh_c', ns(now, i), { state: 'retrying' }), attemptOf(i));
    await admin.pexpire(keys.statusHistory('wh_c'), 60_000);
    for (let i = 15; i < 25; i++) await state.apply({ statuses: [{ status: statusOf('wh_c', ns(now, i), { state: 'retrying' }), attempt: attemptOf(i) }] });
    expect(await attempts('wh_c')).toEqual(Array.from({ length: HISTORY_LIMIT }, (_, i) => i + 25 - HISTORY_LIMIT));
    expect(await admin.pttl(keys.statusHistory('wh_c'))).toBeGreaterThan(DEFAULT_TTLS.status_ttl - 60_000);
  });
});

describe('RedisHotState idempotency keys written before the config id was tagged', () => {
  it('still dedupes a key claimed in the old shape until it expires, and never writes that shape', async () => {
    // What an api wrote just before the upgrade: `idempotency:<config>:<key>`.
    await admin.set('idempotency:tenantA:order-1', 'wh_before', 'PX', 60_000);
    expect(await state.claimIdempotency([{ configId: 'tenantA', key: 'order-1', webhookId: 'wh_after' }], 60_000)).toEqual(['wh_before']);
    expect(await admin.exists(keys.idempotency('tenantA', 'order-1'))).toBe(0);
    await admin.del('idempotency:tenantA:order-1');
    expect(await state.claimIdempotency([{ configId: 'tenantA', key: 'order-1', webhookId: 'wh_after' }], 60_000)).toEqual(['wh_after']);
    expect(await admin.keys('idempotency:tenantA:*')).toEqual([]);
  });
});

describe('RedisHotState resilience', () => {
  // The script takes runs of statuses that share a config and whether they carry an attempt:
  // grouped when each webhook appears once, in the order given when one appears twice.
  it.each([
    ['each webhook once', false],
    ['a webhook twice (pending, then delivered)', true],
  ])('writes one apply whose statuses interleave configs, with and without attempts, as if one by one: %s', async (_, twice) => {
    // Ids above the index trim floor (ULID text of now - status_ttl).
    const id = (i: number) => `wh_z${i}`;
    const statuses: StatusWrite[] = [];
    for (let i = 0; i < 6; i++) {
      const config = `c${i % 3}`;
      if (twice || !(i % 2)) statuses.push({ status: statusOf(id(i), ns(1), { state: 'pending', config_id: config, endpoint_hash: `e${i % 3}` }) });
      if (i % 2) statuses.push({ status: statusOf(id(i), ns(2), { state: 'delivered', config_id: config, endpoint_hash: `e${i % 3}` }), attempt: attemptOf(i) });
    }
    await state.apply({ statuses });
    for (let i = 0; i < 6; i++) {
      const s = await state.getStatus(id(i));
      expect(s).toMatchObject({ state: i % 2 ? 'delivered' : 'pending', config_id: `c${i % 3}` });
      expect(s!.history).toEqual(i % 2 ? [attemptOf(i)] : []);
    }
    for (let c = 0; c < 3; c++) {
      const mine = [0, 1, 2, 3, 4, 5].filter((i) => i % 3 === c);
      expect(await admin.zrange(keys.webhookIndex(`c${c}`), 0, -1)).toEqual(mine.map((i) => id(i)));
      expect(await admin.zrange(keys.webhookStateIndex(`c${c}`, 'delivered'), 0, -1)).toEqual(mine.filter((i) => i % 2).map((i) => id(i)));
      expect(await admin.zrange(keys.webhookStateIndex(`c${c}`, 'pending'), 0, -1)).toEqual(mine.filter((i) => !(i % 2)).map((i) => id(i)));
    }
  });

  it('keeps working after the script cache is flushed (as after a Redis restart)', async () => {
    const now = Date.now();
    await state.apply({ statuses: [{ status: statusOf('wh_f', ns(now, 1)) }] });
    await admin.script('FLUSH');
    await state.apply({
      statuses: [{ status: statusOf('wh_f', ns(now, 2), { state: 'delivered' }), attempt: attemptOf(1) }],
      retries: [{ id: 'wh_f', dueAt: now - 1, data: 'd' }],
    });
    expect((await state.getStatus('wh_f'))?.state).toBe('delivered');
    await admin.script('FLUSH');
    const [claimed] = await state.claimDueRetries(now, 10, 1_000);
    await admin.script('FLUSH');
    await state.ackRetries([{ id: 'wh_f', leaseDueAt: claimed!.dueAt }]);
    expect(await state.retryCount()).toBe(0);
    await state.claimIdempotency([{ configId: 'cfg', key: 'k', webhookId: 'wh_f' }], 60_000);
    await admin.script('FLUSH');
    await state.releaseIdempotency([{ configId: 'cfg', key: 'k', webhookId: 'wh_f' }]);
    expect(await admin.exists('idempotency:cfg:k')).toBe(0);
  });

  it('fails fast with UnavailableError when Redis is unreachable', async () => {
    const down = new RedisHotState(createRedis(`redis://127.0.0.1:${await freePort()}`, { onError: () => {} }), DEFAULT_TTLS);
    try {
      for (const call of [() => down.ping(), () => down.apply({ retries: [{ id: 'a', dueAt: 1, data: 'x' }] }), () => down.claimDueRetries(1, 10, 10)]) {
        const t = Date.now();
        await expect(call()).rejects.toBeInstanceOf(UnavailableError);
        expect(Date.now() - t).toBeLessThan(1_500);
      }
    } finally {
      await down.close();
    }
  });

  it('turns a stuck Redis into UnavailableError after commandTimeout', async () => {
    const slow = new RedisHotState(createRedis(url, { db: db(), commandTimeoutMs: 100 }), DEFAULT_TTLS);
    try {
      await slow.ping();
      // A script that spins for 400 ms blocks the whole server.
      const busy = admin.eval("local t = redis.call('TIME'); local s = t[1] * 1e6 + t[2]; repeat t = redis.call('TIME') until t[1] * 1e6 + t[2] - s > 400000; return 1", 0);
      await new Promise((r) => setTimeout(r, 20));
      const t = Date.now();
      await expect(slow.retryCount()).rejects.toBeInstanceOf(UnavailableError);
      expect(Date.now() - t).toBeLessThan(350);
      await busy;
    } finally {
      await slow.close();
    }
  });

  it('leaves error replies (a defect, not an outage) as they are', async () => {
    await admin.set(retryKeyOf('a'), 'not a zset');
    const err = await state.retryCount().catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(UnavailableError);
    expect((err as Error).message).toMatch(/WRONGTYPE/);
    const fromPipeline = await state.apply({ retries: [{ id: 'a', dueAt: 1, data: 'x' }] }).catch((e: unknown) => e);
    expect((fromPipeline as Error).message).toMatch(/WRONGTYPE/);
  });
});
