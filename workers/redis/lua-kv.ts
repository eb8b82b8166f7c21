import type { Redis } from 'ioredis';
import type { KvStore } from '../../core/lua';

/** The Lua kv module on Redis (keys arrive built by keys.kv: kv:t:{transformer}:… or kv:c:{config}:…). */
export const redisKv = (redis: Redis): KvStore => ({
  get: (key) => redis.get(key),
  set: async (key, value, ttlSeconds) => {
    await (ttlSeconds ? redis.set(key, value, 'EX', ttlSeconds) : redis.set(key, value));
  },
  del: async (key) => {
    await redis.del(key);
  },
});
