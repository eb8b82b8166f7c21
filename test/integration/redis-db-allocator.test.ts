import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { requireEnv, uniq } from '../helpers/env';
import { createRedisDbAllocator, FIRST_TEST_DB, releaseRedisDb, RESERVED_DBS, takeRedisDb, TEST_DBS, type RedisDbAllocator } from '../helpers/redis-db';

// The test-db allocator on the real Redis. Leases go under a private prefix and takers do not
// flush, so this file never disturbs the dbs other test runs hold on the shared server.
describe('Redis test-db allocator', () => {
  const url = requireEnv('REDIS_URL');
  const ALL = TEST_DBS.length;
  let prefix: string;
  let lease0: Redis;
  const open: RedisDbAllocator[] = [];
  const allocator = (o: { ttlMs?: number; renewMs?: number; waitMs?: number } = {}) => {
    const a = createRedisDbAllocator({ url, prefix, flush: false, ...o });
    open.push(a);
    return a;
  };

  beforeAll(() => {
    lease0 = createRedis(url, { db: 0 });
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((a) => a.close()));
    const keys = await lease0.keys(`${prefix}*`);
    if (keys.length) await lease0.del(...keys);
  });
  afterAll(() => {
    lease0.disconnect();
  });
  const fresh = () => (prefix = `${uniq('howk:test:db-lease-selftest')}:`);

  it('two takers taking at once never get the same db, nor db 0 or a reserved one', async () => {
    fresh();
    const [a, b] = [allocator(), allocator()];
    const per = Math.floor(ALL / 2);
    const got = await Promise.all([...Array.from({ length: per }, () => a.take()), ...Array.from({ length: per }, () => b.take())]);
    expect(new Set(got).size).toBe(got.length);
    for (const db of got) {
      expect(db).toBeGreaterThanOrEqual(1);
      expect(db).toBeLessThanOrEqual(63);
      expect(RESERVED_DBS).not.toContain(db);
    }
  });

  it('when all dbs are held, a taker waits; a released db is taken again', async () => {
    fresh();
    const holder = allocator();
    const held = await Promise.all(Array.from({ length: ALL }, () => holder.take()));
    expect(new Set(held).size).toBe(ALL);
    const waiter = allocator({ waitMs: 20_000 });
    let got: number | undefined;
    const taking = waiter.take().then((db) => (got = db));
    await new Promise((r) => setTimeout(r, 500));
    expect(got).toBeUndefined();
    await holder.release(held[7]!);
    await taking;
    expect(got).toBe(held[7]);
  });

  it('gives up with a clear error when nothing frees up in time', async () => {
    fresh();
    const holder = allocator();
    await Promise.all(Array.from({ length: ALL }, () => holder.take()));
    await expect(allocator({ waitMs: 300 }).take()).rejects.toThrow(/no free Redis test db/);
  });

  it("takes over a crashed holder's db once its lease expires, and never a renewed one", async () => {
    fresh();
    // A crashed run: leases on every db that nobody renews.
    for (const db of TEST_DBS) await lease0.set(`${prefix}${db}`, 'crashed-run', 'PX', 800);
    const t0 = Date.now();
    const db = await allocator({ waitMs: 20_000 }).take();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(500);
    expect(db).toBeGreaterThanOrEqual(FIRST_TEST_DB);

    // A live holder renews: its short leases outlive their ttl several times over. The ttl
    // leaves room for a timer held up by a loaded machine (at 400 ms with renewals every
    // 100 ms, a run beside other test lanes lost one lease to a late renewal).
    const live = allocator({ ttlMs: 1_000, renewMs: 100 });
    const mine = await Promise.all(Array.from({ length: ALL - 1 }, () => live.take()));
    await new Promise((r) => setTimeout(r, 3_500));
    await expect(allocator({ waitMs: 300 }).take()).rejects.toThrow(/no free Redis test db/);
    for (const d of mine) await live.release(d);
  });

  it('release reports a lease lost while held', async () => {
    fresh();
    const a = allocator({ ttlMs: 60_000, renewMs: 60_000 });
    const db = await a.take();
    await lease0.set(`${prefix}${db}`, 'someone-else');
    await expect(a.release(db)).rejects.toThrow(/expired while this test held it/);
  });

  it('the shared takeRedisDb hands out a flushed db of its own', async () => {
    const db = await takeRedisDb();
    try {
      expect(db).toBeGreaterThanOrEqual(FIRST_TEST_DB);
      expect(await lease0.pttl(`howk:test:db-lease:${db}`)).toBeGreaterThan(0);
      const r = createRedis(url, { db });
      expect(await r.dbsize()).toBe(0);
      r.disconnect();
    } finally {
      await releaseRedisDb(db);
    }
    expect(await lease0.exists(`howk:test:db-lease:${db}`)).toBe(0);
  });
});
