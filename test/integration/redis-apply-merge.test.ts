import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { hourBucket } from '../../core/domain/time';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { requireEnv } from '../helpers/env';
import { useFlushedRedis } from '../helpers/flushed-redis';
import { DEFAULT_TTLS, ns, statusOf } from '../contract/hot-state.fixtures';
import { countRedisTrips } from '../helpers/redis-trips';

// The worker's batches whose outcomes one Kafka produce acknowledged apply their statuses and
// stats in the same event-loop turn: they must leave in one Redis round trip, with their stats
// added once for all (not once per batch), and every total still right.
let admin: Redis;
let client: Redis;
let state: RedisHotState;
const db = useFlushedRedis((r) => (admin = r));
beforeAll(() => {
  client = createRedis(requireEnv('REDIS_URL'), { db: db() });
  state = new RedisHotState(client, DEFAULT_TTLS);
});
afterAll(async () => {
  await state.close();
});

const counted = (f: () => Promise<unknown>) => countRedisTrips(client, f);

describe('RedisHotState.apply of batches in the same turn', () => {
  it('writes three batches in one round trip with their stats added once and their ended removed together, and every status and total is right', async () => {
    const now = Date.now();
    await state.getStatus('warm'); // scripts loaded, connection up
    const batches = ['a', 'b', 'c'].map((x, i) => ({
      statuses: [{ status: statusOf(`wh_${x}`, ns(now, i), { state: 'delivered', attempts: 1 }) }],
      ended: [`wh_${x}`],
      stats: { at: now, counts: { delivered: 1 }, endpoints: [`ep_${x === 'c' ? 'a' : x}`] },
    }));
    const one = await counted(() => state.apply(batches[0]!));
    // What one batch's ended webhook costs alone (its schedule entry and data removed, per
    // shard), and the three batches' ended removed together.
    const endedOnly = await counted(() => state.apply({ ended: ['wh_a'] }));
    const endedThree = await counted(() => state.apply({ ended: ['wh_a', 'wh_b', 'wh_c'] }));
    await admin.flushdb();
    const three = await counted(() => Promise.all(batches.map((b) => state.apply(b))));

    expect(three.trips).toBe(1);
    // One set of stats commands for the three, and their ended removals together (one per
    // shard, not per batch): what one batch costs, its removal replaced by the three's.
    expect(three.commands).toBe(one.commands - endedOnly.commands + endedThree.commands);
    expect(endedThree.commands).toBeLessThan(3 * endedOnly.commands);
    for (const x of ['a', 'b', 'c']) expect(JSON.parse((await admin.hget(keys.status(`wh_${x}`), 'data'))!)).toMatchObject({ state: 'delivered' });
    expect(await admin.get(keys.stats('delivered', hourBucket(now)))).toBe('3');
    expect(await admin.pfcount(keys.endpointsHll(hourBucket(now)))).toBe(2);
    expect((await state.stats(now, 1)).delivered).toBe(3);
  });
});
