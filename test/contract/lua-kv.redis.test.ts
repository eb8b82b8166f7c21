import { afterAll } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { redisKv } from '../../workers/redis/lua-kv';
import { requireEnv } from '../helpers/env';
import { luaKvContract } from './lua-kv.contract';

// Real Redis, db 41; every name is unique per run, so nothing is flushed.
const redis = createRedis(requireEnv('REDIS_URL'), { db: 41 });
afterAll(() => redis.quit());

luaKvContract('redis', () => redisKv(redis));
