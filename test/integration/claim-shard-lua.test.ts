import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useFlushedRedis } from '../helpers/flushed-redis';
import { SCRIPTS, type ScriptName } from '../../workers/redis/scripts';

// claimShard-2.lua against real Redis, called directly by its header contract (KEYS, ARGV,
// returns), independent of the adapter around it. A db of its own (useFlushedRedis), flushed before each test.
let redis: Redis;
useFlushedRedis((r) => (redis = r));

const run = (name: ScriptName, keys: string[], args: (string | number)[]) => redis.eval(SCRIPTS[name].lua, SCRIPTS[name].numberOfKeys, ...keys, ...args);

describe('claimShard-2.lua', () => {
  const now = 1_750_000_000_000;
  const lease = now + 30_000;
  const L = String(lease);
  // One shard on one Redis: keys.retryShard(0) and the config queues beside it.
  const schedule = async (id: string, due: number, data: string | null = `d:${id}`, config = 'c1', indexed = true) => {
    if (indexed) await redis.zadd(`retries:0:config:{${config}}`, due, id);
    if (indexed) await redis.zadd('retries:0:configs', 'LT', due, config);
    await redis.zadd('retries:0', due, id);
    if (data !== null) await redis.set(`retry_data:${id}`, data, 'PX', 60_000);
  };
  const claim = (limit: number, leaseDue = lease) => run('claimShard', ['retries:0', 'retries:0:configs'], [now, limit, leaseDue, 'retry_data:', 'retries:0:config:']);

  it('returns id, data, leaseDueAt triples of due entries in due order, up to the limit, re-scored to the lease', async () => {
    await schedule('c', now);
    await schedule('a', now - 20);
    await schedule('b', now - 10);
    await schedule('later', now + 1);
    expect(await claim(2)).toEqual(['a', 'd:a', L, 'b', 'd:b', L]);
    expect(await redis.zrange('retries:0', 0, -1, 'WITHSCORES')).toEqual(['c', String(now), 'later', String(now + 1), 'a', String(lease), 'b', String(lease)]);
    expect(await redis.pttl('retry_data:a')).toBeGreaterThan(59_000);
    expect(await claim(10)).toEqual(['c', 'd:c', L]);
    expect(await claim(10)).toEqual([]);
    expect(await claim(0)).toEqual([]);
  });

  it('drops entries whose data is gone and fills the limit from the next ones', async () => {
    await schedule('gone1', now - 30, null);
    await schedule('gone2', now - 20, null);
    await schedule('ok1', now - 10);
    await schedule('ok2', now - 5);
    expect(await claim(2)).toEqual(['ok1', 'd:ok1', L, 'ok2', 'd:ok2', L]);
    expect(await redis.zrange('retries:0', 0, -1)).toEqual(['ok1', 'ok2']);
  });

  it('makes a single pass when the lease does not leave the due range', async () => {
    await schedule('gone', now - 30, null);
    await schedule('a', now - 20);
    await schedule('b', now - 10);
    expect(await claim(3, now)).toEqual(['a', 'd:a', String(now), 'b', 'd:b', String(now)]);
  });

  it('gives each config with due retries an equal part, however many the other config has due earlier', async () => {
    for (let i = 0; i < 50; i++) await schedule(`storm${String(i).padStart(2, '0')}`, now - 1000 + i, `d`, 'storm');
    await schedule('calm', now - 1, 'd', 'calm');
    const ids = ((await claim(4)) as string[]).filter((_, i) => i % 3 === 0);
    expect(ids).toContain('calm');
    expect(ids).toHaveLength(4);
  });

  it('cleans queue entries acked or renewed since, and still claims due entries no queue knows', async () => {
    await schedule('acked', now - 30);
    await schedule('renewed', now - 20);
    await schedule('unindexed', now - 10, 'd:u', 'c1', false);
    await redis.zrem('retries:0', 'acked');
    await redis.zadd('retries:0', now + 5_000, 'renewed');
    expect(await claim(10)).toEqual(['unindexed', 'd:u', L]);
    expect(await redis.zrange('retries:0:config:{c1}', 0, -1, 'WITHSCORES')).toEqual(['renewed', String(now + 5_000)]);
    expect(await redis.zscore('retries:0:configs', 'c1')).toBe(String(now + 5_000));
  });
});
