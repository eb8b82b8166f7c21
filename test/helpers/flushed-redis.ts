import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { requireEnv } from './env';
import { flushOwnDb, useRedisDb } from './redis-db';

/**
 * A connection to a Redis db of the enclosing file's (or describe's) own, for tests that talk to
 * Redis directly: the db taken (useRedisDb) and the connection opened before the tests, the db
 * flushed before each test, the connection closed after them. The connection goes to `set`
 * (tests keep it in a `let` of their own); returns the db, for further connections to it.
 *
 *   let redis: Redis;
 *   useFlushedRedis((r) => (redis = r));
 */
export const useFlushedRedis = (set: (r: Redis) => void): (() => number) => {
  const db = useRedisDb();
  let redis: Redis | undefined;
  beforeAll(() => {
    redis = createRedis(requireEnv('REDIS_URL'), { db: db() });
    set(redis);
  });
  afterAll(async () => {
    await redis?.quit();
    redis = undefined;
  });
  beforeEach(async () => {
    if (!redis) throw new Error('useFlushedRedis(): no connection (its beforeAll did not run)');
    await flushOwnDb(redis, db());
  });
  return db;
};
