import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { KvStore } from '../../core/lua/types';
import { createRedis } from '../../workers/redis/client';
import { redisKv } from '../../workers/redis/lua-kv';
import { requireEnv } from '../helpers/env';
import { useRedisDb } from '../helpers/redis-db';
import { luaKvContract } from './lua-kv.contract';

// Real Redis, a db of its own (useRedisDb); every name is unique per run, so nothing is flushed.
// The contract makes its store while collecting tests, before the db is taken: it gets one that
// forwards to the Redis store made in beforeAll.
const db = useRedisDb();
let redis: Redis;
let store: KvStore;
beforeAll(() => {
  redis = createRedis(requireEnv('REDIS_URL'), { db: db() });
  store = redisKv(redis);
});
afterAll(() => redis?.quit());

luaKvContract('redis', () => ({
  get: (key) => store.get(key),
  set: (key, value, ttlSeconds) => store.set(key, value, ttlSeconds),
  del: (key) => store.del(key),
}));
