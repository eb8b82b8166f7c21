import { fromBase64, toBase64, toHex } from '../signing/encoding';
import { KILL_MESSAGES, type HostFn, type Vm, type VmState } from './runtime';
import { REGISTRY, T_NIL } from './wasm-api';
import { hmacSha256Sync, sha256 } from './sha256';
import { pushJs, readLua, stringifyJson, type Refs } from './values';
import type { LuaLimits, LuaServices } from './types';

// The host functions behind the prelude's modules (json, base64, crypto, log) and the
// plumbing between the prelude and the engine (register, input, killed, take, finish, emit).
// Module errors come back to Lua as (nil, message); misuse (a wrong argument type) raises.

export type TicketResult = { values?: unknown[]; error?: string };

/** Everything one run owns. A fresh state per run: nothing survives into the next. */
export type RunState = VmState & {
  mode: 'delivery' | 'transform';
  refs: Refs;
  input: unknown;
  services: LuaServices;
  limits: LuaLimits;
  tickets: Map<number, Promise<void>>;
  results: Map<number, TicketResult>;
  nextTicket: number;
  hostCalls: number;
  logLines: number;
  /** Arguments of H.finish (delivery), read as JS values. */
  finished?: unknown[];
  /** howk.post (transform): validates and collects; returns an error message to refuse. */
  emit?: (args: unknown[]) => string | undefined;
  abort: AbortController;
};

export type Host = HostFn<RunState>;

const MAX_LOG_LINES = 100;
const MAX_LOG_CHARS = 4096;

export const pushNilErr = (vm: Vm, L: number, message: string): number => {
  vm.em._lua_pushnil(L);
  vm.pushString(L, message);
  return 2;
};

/** A string (or number) argument; raises Lua's usual "bad argument" error otherwise. */
export const argText = (vm: Vm, L: number, i: number, fn: string): string => {
  const s = vm.text(L, i);
  if (s === undefined) throw new Error(`bad argument #${i} to '${fn}' (string expected)`);
  return s;
};
export const argBytes = (vm: Vm, L: number, i: number, fn: string): Uint8Array => {
  if (vm.text(L, i) === undefined) throw new Error(`bad argument #${i} to '${fn}' (string expected)`);
  return vm.readBytes(L, i)!.slice();
};

/** Starts an async host call; Lua receives a ticket and yields it (prelude `await`). */
export const startAsync = (vm: Vm, L: number, s: RunState, work: () => Promise<unknown[]>): number => {
  if (++s.hostCalls > s.limits.maxHostCalls) return pushNilErr(vm, L, `too many host calls in one run (limit ${s.limits.maxHostCalls})`);
  const id = ++s.nextTicket;
  const p = (async () => work())().then(
    (values) => void s.results.set(id, { values }),
    (e: unknown) => void s.results.set(id, { error: e instanceof Error ? e.message : String(e) }),
  );
  s.tickets.set(id, p);
  vm.em._lua_pushinteger(L, BigInt(id));
  return 1;
};

/** Standard or URL-safe alphabet, padding optional (webhook secrets come in both). */
const decodeBase64 = (s: string): Uint8Array => {
  const body = s.replace(/\s+/g, '').replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
  if (!/^[A-Za-z0-9+/]*$/.test(body) || body.length % 4 === 1) throw new Error('invalid base64');
  return fromBase64(body.padEnd(Math.ceil(body.length / 4) * 4, '='));
};

export const coreHost: Record<string, Host> = {
  /** The prelude's json.null and its private array metatable, kept in the registry for the value converters. */
  register(vm, L, s) {
    vm.em._lua_settop(L, 2);
    const arrayMt = vm.em._luaL_ref(L, REGISTRY); // luaL_ref pops the top value
    s.refs = { null: vm.em._luaL_ref(L, REGISTRY), arrayMt };
    return 0;
  },
  input(vm, L, s) {
    pushJs(vm, L, s.input, s.refs);
    return 1;
  },
  /** The message to raise again if the run was killed, else nothing. */
  killed(vm, L, s) {
    if (!s.killed) return 0;
    vm.pushString(L, KILL_MESSAGES[s.killed]);
    return 1;
  },
  take(vm, L, s) {
    const id = Number(vm.text(L, 1));
    const r = s.results.get(id);
    s.results.delete(id);
    if (!r) return pushNilErr(vm, L, 'host call result missing');
    if (r.error !== undefined) return pushNilErr(vm, L, r.error);
    for (const v of r.values!) pushJs(vm, L, v, s.refs);
    return r.values!.length;
  },
  finish(vm, L, s) {
    const n: number = vm.em._lua_gettop(L);
    s.finished = [];
    for (let i = 1; i <= n; i++) s.finished.push(readLua(vm, L, i, s.refs));
    return 0;
  },
  emit(vm, L, s) {
    if (!s.emit) throw new Error('howk.post is only available to transformers');
    const n: number = vm.em._lua_gettop(L);
    const args: unknown[] = [];
    try {
      for (let i = 1; i <= n; i++) args.push(readLua(vm, L, i, s.refs));
    } catch (e) {
      return pushNilErr(vm, L, `howk.post: ${(e as Error).message}`);
    }
    const err = s.emit(args);
    if (err !== undefined) return pushNilErr(vm, L, err);
    vm.em._lua_pushboolean(L, 1);
    return 1;
  },

  json_encode(vm, L, s) {
    let text: string;
    try {
      text = stringifyJson(readLua(vm, L, 1, s.refs));
    } catch (e) {
      return pushNilErr(vm, L, (e as Error).message);
    }
    vm.pushString(L, text);
    return 1;
  },
  json_decode(vm, L, s) {
    const text = argText(vm, L, 1, 'json.decode');
    try {
      pushJs(vm, L, JSON.parse(text), s.refs);
    } catch (e) {
      if (typeof e === 'number') throw e; // a Lua error (memory) unwinding: not ours to catch
      // Whatever pushJs left on the stack lies below the two results returned.
      return pushNilErr(vm, L, (e as Error).message);
    }
    return 1;
  },
  base64_encode(vm, L) {
    vm.pushString(L, toBase64(argBytes(vm, L, 1, 'base64.encode')));
    return 1;
  },
  base64_decode(vm, L) {
    let bytes: Uint8Array;
    try {
      bytes = decodeBase64(argText(vm, L, 1, 'base64.decode'));
    } catch (e) {
      return pushNilErr(vm, L, (e as Error).message);
    }
    vm.pushBytes(L, bytes);
    return 1;
  },
  /** string.rep(s, k, sep) for k > 16, already size-checked by the prelude. */
  rep(vm, L) {
    const piece = argBytes(vm, L, 1, 'string.rep');
    const k = Number(vm.text(L, 2));
    const sep = vm.type(L, 3) > T_NIL ? argBytes(vm, L, 3, 'string.rep') : new Uint8Array(0);
    const unit = piece.length + sep.length;
    const out = new Uint8Array(Math.max(0, k * unit - sep.length));
    const first = new Uint8Array(unit);
    first.set(piece);
    first.set(sep, piece.length);
    out.set(first.subarray(0, Math.min(unit, out.length)));
    // The output is periodic in `unit`: copying the filled prefix after itself keeps it so.
    for (let filled = Math.min(unit, out.length); filled < out.length;) {
      const n = Math.min(filled, out.length - filled);
      out.copyWithin(filled, 0, n);
      filled += n;
    }
    vm.pushBytes(L, out);
    return 1;
  },
  sha256(vm, L) {
    vm.pushString(L, toHex(sha256(argBytes(vm, L, 1, 'crypto.sha256'))));
    return 1;
  },
  hmac_sha256(vm, L) {
    const key = argBytes(vm, L, 1, 'crypto.hmac_sha256');
    vm.pushString(L, toHex(hmacSha256Sync(key, argBytes(vm, L, 2, 'crypto.hmac_sha256'))));
    return 1;
  },
  log(vm, L, s) {
    if (++s.logLines > MAX_LOG_LINES) return 0; // a looping script must not flood the logs
    const level = vm.text(L, 1) as 'info' | 'warn' | 'error';
    let message = vm.text(L, 2) ?? '';
    if (message.length > MAX_LOG_CHARS) message = `${message.slice(0, MAX_LOG_CHARS)}…`;
    let fields: Record<string, unknown> | undefined;
    if (vm.type(L, 3) > T_NIL) {
      try {
        const f = readLua(vm, L, 3, s.refs);
        fields = f && typeof f === 'object' && !Array.isArray(f) ? (f as Record<string, unknown>) : { value: f };
      } catch (e) {
        fields = { fields_error: (e as Error).message };
      }
    }
    s.services.log?.(level, s.logLines === MAX_LOG_LINES ? `${message} (log limit reached: later lines dropped)` : message, fields);
    return 0;
  },
};
