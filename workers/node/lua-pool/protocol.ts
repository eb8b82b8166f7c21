import type { KvScope } from '../../../core/domain/keys';
import type { HttpPolicy, LuaLimits, LuaLogLevel } from '../../../core/lua';
import { LuaError, LuaMemoryError, LuaRuntimeError, LuaSyntaxError, LuaTimeoutError } from '../../../core/lua';

// Messages between the pool (main thread) and a Lua worker thread. Everything a script's
// host services do happens in the main thread; the worker only runs Lua.

export type HostOp = 'kv.get' | 'kv.set' | 'kv.del' | 'fetch' | 'credential';

/** main → worker */
export type ToWorker =
  | {
      t: 'run';
      code: string;
      mode: 'delivery' | 'transform';
      input: { request: Record<string, unknown>; webhook?: Record<string, unknown> };
      limits: LuaLimits;
      kvScope?: KvScope;
      http?: HttpPolicy;
      /** Which services the caller supplied: the worker offers proxies for those only. */
      has: { kv: boolean; fetch: boolean; credential: boolean; log: boolean; emit: boolean };
    }
  | { t: 'reply'; id: number; ok: true; value: unknown }
  | { t: 'reply'; id: number; ok: false; error: string };

export type FetchReply = { status: number; statusText: string; headers: [string, string][]; body: Uint8Array | null };

export type WireError = { code?: string; name: string; message: string; traceback?: string; limitBytes?: number };

/** worker → main */
export type FromWorker =
  | { t: 'ready' }
  | { t: 'call'; id: number; op: HostOp; args: unknown[] }
  | { t: 'abort'; id: number; reason: string }
  | { t: 'log'; level: LuaLogLevel; message: string; fields?: Record<string, unknown> }
  /** Answered on the sync port, then Atomics.notify: howk.post returns its verdict synchronously. */
  | { t: 'emit'; args: unknown[] }
  | { t: 'done'; finished: unknown[] | undefined; cpuMs: number }
  | { t: 'failed'; error: WireError };

export const toWire = (e: unknown): WireError => {
  if (e instanceof LuaError) {
    return {
      code: e.code,
      name: e.name,
      message: e.message,
      traceback: e instanceof LuaRuntimeError ? e.traceback : undefined,
      limitBytes: e instanceof LuaMemoryError ? e.limitBytes : undefined,
    };
  }
  return { name: e instanceof Error ? e.name : 'Error', message: e instanceof Error ? e.message : String(e) };
};

/** The same error classes as an in-process run throws: callers cannot tell where it ran. */
export const fromWire = (w: WireError): Error => {
  switch (w.code) {
    case 'script_syntax_error':
      return new LuaSyntaxError(w.message);
    case 'script_runtime_error':
      return new LuaRuntimeError(w.message, w.traceback);
    case 'script_timeout':
      return new LuaTimeoutError(w.message);
    case 'script_memory_limit':
      return new LuaMemoryError(w.limitBytes ?? 0);
    default:
      return new Error(w.message);
  }
};
