import type { Redis } from '@upstash/redis/cloudflare';
import { createLuaEngine, type KvStore, type LuaEngine } from '../../core/lua';
import { workerdWasmLoader } from './loader';

// The core Lua engine (core/lua) on the workerd loader. workerd's clock stands still while
// JS runs without I/O, so a CPU deadline in ms cannot fire inside the VM there: runs are
// bounded by an instruction budget instead.

let engine: LuaEngine | undefined;
export const edgeLuaEngine = (maxInstructions: number): LuaEngine => (engine ??= createLuaEngine({ loadWasm: workerdWasmLoader, limits: { maxInstructions } }));

/** The Lua kv module over the Redis REST dialect (keys arrive built by keys.kv). */
export const restKv = (redis: Redis): KvStore => ({
  get: (key) => redis.get<string>(key),
  set: async (key, value, ttlSeconds) => {
    await (ttlSeconds ? redis.set(key, value, { ex: ttlSeconds }) : redis.set(key, value));
  },
  del: async (key) => {
    await redis.del(key);
  },
});
