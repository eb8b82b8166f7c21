import { createRedis } from '../../workers/redis/client';
import { requireEnv } from './env';
import { flushOwnDb } from './redis-db';

/** Empties the test's own Redis db (taken from the allocator) before a fleet starts on it. */
export const emptyOwnDb = async (db: number): Promise<void> => {
  const redis = createRedis(requireEnv('REDIS_URL'), { db, commandTimeoutMs: 2000 });
  await flushOwnDb(redis, db);
  redis.disconnect();
};
