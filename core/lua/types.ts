// What the host supplies to scripts, and the limits a run is held to.
import type { KvScope } from '../domain/keys';

export type LuaLimits = {
  /** CPU deadline in ms, enforced inside the VM by an instruction-count hook. Time spent awaiting host calls is not counted. */
  timeoutMs: number;
  /**
   * Optional deterministic budget of Lua VM instructions (counted per 1000). Use it where
   * the clock does not advance during synchronous execution (workerd), so `timeoutMs` alone cannot fire.
   */
  maxInstructions: number | undefined;
  /** Memory cap of the Lua state (everything the script allocates, plus ~40 KB of libraries). */
  memoryLimitMb: number;
  /** Wall-clock limit of the whole run, including time spent awaiting kv/http/credentials. */
  wallTimeoutMs: number;
  /** Largest string string.rep may build. */
  maxStringBytes: number;
  /** kv/http/credential calls per run. */
  maxHostCalls: number;
};

export const DEFAULT_LIMITS: LuaLimits = {
  timeoutMs: 500,
  maxInstructions: undefined,
  memoryLimitMb: 32,
  wallTimeoutMs: 10_000,
  maxStringBytes: 1024 * 1024,
  maxHostCalls: 100,
};

export type LuaLogLevel = 'info' | 'warn' | 'error';
export type LuaLogSink = (level: LuaLogLevel, message: string, fields?: Record<string, unknown>) => void;

/**
 * The store behind the `kv` module. Keys arrive fully built (`kv:{ns}:{key}`, keys.ts);
 * the Redis adapter maps set with a ttl to SET ... EX.
 */
export type KvStore = {
  get(key: string): Promise<string | null>;
  set(key: string, value: string, ttlSeconds?: number): Promise<void>;
  del(key: string): Promise<void>;
};

/** The subset of fetch the http module uses; inject a guarded one (DNS/IP checks) in production. */
export type FetchLike = (url: string, init: { method: string; headers: Record<string, string>; body?: string; redirect: 'manual'; signal: AbortSignal }) => Promise<Response>;

export type HttpPolicy = {
  /** Host names the script may call: "api.example.com" exactly, "*.example.com" for its subdomains. */
  allow: readonly string[];
  timeoutMs?: number;
  maxResponseBytes?: number;
  maxRedirects?: number;
};

export type LuaServices = {
  log?: LuaLogSink;
  kv?: KvStore;
  /** Whose kv store the script uses: its config (delivery scripts) or its transformer. */
  kvScope?: KvScope;
  fetch?: FetchLike;
  http?: HttpPolicy;
  /** Returns the plaintext of a named credential, or null if there is none. The host holds the keys. */
  decryptCredential?: (name: string) => Promise<string | null>;
};

/** Config keys of a namespace with fallback: `wh:42:6` → `wh:42:6`, `wh:42`, `wh`. */
export const namespaceChain = (ns: string): string[] => {
  const out = [ns];
  for (let i = ns.lastIndexOf(':'); i > 0; i = ns.lastIndexOf(':', i - 1)) out.push(ns.slice(0, i));
  return out;
};
