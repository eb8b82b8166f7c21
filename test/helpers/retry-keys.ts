import type { Redis } from 'ioredis';
import { keys, type RedisKeys } from '../../core/domain/keys';
import { allShards, DEFAULT_RETRY_SHARDS, shardOf } from '../../core/domain/retry-shards';

// Where a test finds the retry schedule: the shard of a webhook id, or every shard at once.

/** The shard zset holding the webhook's retry (or delivery lease). */
export const retryKeyOf = (id: string, k: RedisKeys = keys, shards = DEFAULT_RETRY_SHARDS): string => k.retryShard(shardOf(id, shards));

/** Every scheduled webhook id, over all shards (sorted). */
export const scheduledIds = async (redis: Redis, k: RedisKeys = keys, shards = DEFAULT_RETRY_SHARDS): Promise<string[]> => {
  const p = redis.pipeline();
  for (const s of allShards(shards)) p.zrange(k.retryShard(s), 0, -1);
  const replies = (await p.exec()) ?? [];
  return replies.flatMap(([, ids]) => ids as string[]).sort();
};

/** How many entries the shards hold. */
export const scheduledCount = async (redis: Redis, k: RedisKeys = keys, shards = DEFAULT_RETRY_SHARDS): Promise<number> => (await scheduledIds(redis, k, shards)).length;
