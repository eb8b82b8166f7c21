import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { createRedis } from '../../workers/redis/client';
import { redisEndedLookup, SENT_FIELD } from '../../workers/redis/ended-lookup';
import { RedisGuards } from '../../workers/redis/guards';
import { requireEnv } from '../helpers/env';
import { useFlushedRedis } from '../helpers/flushed-redis';
import { completion, params, req, T0 } from '../contract/guards.fixtures';
import { countRedisTrips } from '../helpers/redis-trips';

// A worker's 2xx writes a sent mark and ends the delivery's leases within the same
// millisecond: on one Redis the two go in one round trip (the mark rides the guards call,
// workers/redis/riding-marks.ts), and a mark with no guards call to ride is still written.
let admin: Redis;
let client: Redis;
const db = useFlushedRedis((r) => (admin = r));
beforeAll(() => {
  client = createRedis(requireEnv('REDIS_URL'), { db: db() });
});
afterAll(async () => {
  await client.quit();
});

const trips = async (f: () => Promise<unknown>): Promise<number> => (await countRedisTrips(client, f)).trips;

const mark = (i: number) => ({ id: `wh_ride_${i}`, mark: { pass: 0, status: 200, at: T0 + i, durationMs: 3 } });

describe('sent marks on one Redis', () => {
  it('ride the completion call that follows the answer: one command for both, the mark written and the completion answered', async () => {
    const ended = redisEndedLookup(client, 60_000);
    const guards = new RedisGuards(client, undefined, ended.riding);
    const p = params();
    // One delivery admitted and completed first: on a Redis that has never run the completion
    // script, its first call's NOSCRIPT fallback is a round trip of its own.
    const [w] = await guards.admit([req({ id: 'wh_ride_warm' })], p);
    await guards.complete([completion({ id: 'wh_ride_warm', outcome: 'success', counted: w?.kind === 'go' ? w.counted : { endpoint: false, domain: false } })], p);
    const [a] = await guards.admit([req({ id: 'wh_ride_1' })], p);
    expect(a?.kind).toBe('go');
    const counted = a?.kind === 'go' ? a.counted : { endpoint: false, domain: false };
    const n = await countRedisTrips(client, async () => {
      // As the worker does: the completion's batch leaves after the current macrotask, the mark is asked for right after the answer.
      const done = new Promise<unknown>((resolve, reject) =>
        setTimeout(() => guards.complete([completion({ id: 'wh_ride_1', outcome: 'success', counted })], p).then(resolve, reject), 0),
      );
      const [, moved] = await Promise.all([ended.markSent!([mark(1)]), done]);
      expect(moved).toEqual([]);
    });
    // The marks are arguments of the completion's own script call.
    expect(n).toMatchObject({ trips: 1, commands: 1 });
    expect(await admin.hget(keys.status('wh_ride_1'), SENT_FIELD)).toBe(`0:200:${T0 + 1}:3`);
    expect(await admin.pttl(keys.status('wh_ride_1'))).toBeGreaterThan(50_000);
    // The lookup a next owner makes finds it.
    expect((await ended.lookup!(['wh_ride_1'])).sent.get('wh_ride_1')).toEqual(mark(1).mark);
  });

  it('are written on their own when no guards call comes', async () => {
    const ended = redisEndedLookup(client, 60_000);
    const n = await trips(() => Promise.all([ended.markSent!([mark(2)]), ended.markSent!([mark(3)])]));
    expect(n).toBe(1);
    expect(await admin.hget(keys.status('wh_ride_2'), SENT_FIELD)).toBe(`0:200:${T0 + 2}:3`);
    expect(await admin.hget(keys.status('wh_ride_3'), SENT_FIELD)).toBe(`0:200:${T0 + 3}:3`);
  });

  it('fail with the completion call that carried them when Redis is away, and the call fails as before', async () => {
    const away = createRedis('redis://127.0.0.1:1', { maxRetriesPerRequest: 0, connectTimeoutMs: 200, commandTimeoutMs: 500, onError: () => {} });
    try {
      const ended = redisEndedLookup(away, 60_000);
      const guards = new RedisGuards(away, undefined, ended.riding);
      const marked = ended.markSent!([mark(4)]);
      const completed = guards.complete([completion({ id: 'wh_ride_4', outcome: 'success', counted: { endpoint: true, domain: true } })], params());
      await expect(completed).rejects.toMatchObject({ name: 'UnavailableError' });
      await expect(marked).rejects.toMatchObject({ name: 'UnavailableError' });
    } finally {
      away.disconnect();
    }
  });
});
