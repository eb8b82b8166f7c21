import type { KvStore } from '../lua';

/** The Lua kv module in memory (howk-dev, embedded tests): one process, TTLs checked on read. */
export const memoryKv = (now: () => number = Date.now): KvStore => {
  const m = new Map<string, { value: string; expiresAt: number | null }>();
  return {
    get: async (key) => {
      const e = m.get(key);
      if (!e) return null;
      if (e.expiresAt !== null && e.expiresAt <= now()) {
        m.delete(key);
        return null;
      }
      return e.value;
    },
    set: async (key, value, ttlSeconds) => {
      m.set(key, { value, expiresAt: ttlSeconds ? now() + ttlSeconds * 1000 : null });
    },
    del: async (key) => {
      m.delete(key);
    },
  };
};
