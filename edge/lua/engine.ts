import type { Redis } from '@upstash/redis/cloudflare';
import type { Config } from '../../core/config/schema';
import { createLuaEngine, namespaceChain, type KvStore, type LuaEngine, type LuaHostServices } from '../../core/lua';
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

/**
 * The Lua host at the edge: `http` through the Worker's fetch, allowed as on Node
 * (lua.http_allowlist's most specific namespace entry, plus the script's own
 * allowed_hosts). No credentials (crypto.decrypt_credential answers nil, err) and no
 * environment: delivery templates travel in the webhook and the worker resolves them.
 */
export const edgeLuaHost = (config: Config, engine: LuaEngine): LuaHostServices => {
  const lists = config.lua.http_allowlist;
  const base = { timeoutMs: config.lua.http_timeout, maxResponseBytes: config.lua.http_max_response_bytes };
  return {
    forNamespace(namespace, extraHosts = []) {
      const own = namespaceChain(namespace).find((ns) => Object.hasOwn(lists, ns));
      return { fetch: (url, init) => fetch(url, init), http: { ...base, allow: [...(own ? lists[own]! : []), ...extraHosts] } };
    },
    env: () => undefined,
    engine,
  };
};
