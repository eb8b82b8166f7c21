import type { LuaWasm } from 'wasmoon';

// The part of Lua's C API (as exported by wasmoon's glue.wasm) that runtime.ts calls.
// Raw exports are used, not wasmoon's cwrap'd ones, to skip ccall's per-call string marshalling.

// Status codes, value types and pseudo-indices of lua.h (Lua 5.4).
export const LUA_OK = 0;
export const LUA_YIELD = 1;
export const LUA_ERRMEM = 4;
export const T_NIL = 0,
  T_BOOLEAN = 1,
  T_NUMBER = 3,
  T_STRING = 4,
  T_TABLE = 5;
export const REGISTRY = -1001000; // LUA_REGISTRYINDEX for LUAI_MAXSTACK = 1e6

type P = number; // a pointer into WASM memory (lua_State*, char*, ...)
type I = bigint; // lua_Integer is 64-bit: BigInt across the boundary

/** The emscripten module behind wasmoon. */
export type Em = {
  HEAPU8: Uint8Array;
  HEAPU32: Uint32Array;
  _malloc(n: number): P;
  _free(p: P): void;
  _realloc(p: P, n: number): P;
  addFunction(fn: (...args: number[]) => number | void, sig: string): P;
  _lua_newstate(alloc: P, ud: number): P;
  _lua_close(L: P): void;
  _lua_newthread(L: P): P;
  _lua_xmove(from: P, to: P, n: number): void;
  _lua_sethook(L: P, f: P, mask: number, count: number): void;
  _lua_resume(L: P, from: P, nargs: number, nres: P): number;
  _lua_pcallk(L: P, nargs: number, nres: number, errfunc: number, ctx: number, k: P): number;
  _lua_error(L: P): number;
  _lua_dump(L: P, writer: P, data: P, strip: number): number;
  _luaL_loadbufferx(L: P, buf: P, size: number, name: P, mode: P): number;
  _luaL_ref(L: P, t: number): number;
  _luaL_traceback(L: P, L1: P, msg: P, level: number): void;
  _luaL_where(L: P, level: number): void;
  _lua_gettop(L: P): number;
  _lua_settop(L: P, idx: number): void;
  _lua_absindex(L: P, idx: number): number;
  _lua_checkstack(L: P, n: number): number;
  _lua_type(L: P, idx: number): number;
  _lua_isinteger(L: P, idx: number): number;
  _lua_toboolean(L: P, idx: number): number;
  _lua_tointegerx(L: P, idx: number, isnum: P): I;
  _lua_tonumberx(L: P, idx: number, isnum: P): number;
  _lua_tolstring(L: P, idx: number, len: P): P;
  _lua_rawequal(L: P, a: number, b: number): number;
  _lua_next(L: P, idx: number): number;
  _lua_getmetatable(L: P, idx: number): number;
  _lua_setmetatable(L: P, idx: number): number;
  _lua_pushnil(L: P): void;
  _lua_pushboolean(L: P, b: number): void;
  _lua_pushinteger(L: P, n: I): void;
  _lua_pushnumber(L: P, n: number): void;
  _lua_pushlstring(L: P, s: P, len: number): P;
  _lua_pushcclosure(L: P, f: P, n: number): void;
  _lua_createtable(L: P, narr: number, nrec: number): void;
  _lua_rawgeti(L: P, idx: number, n: I): number;
  _lua_rawseti(L: P, idx: number, n: I): void;
  _lua_rawset(L: P, idx: number): void;
  _lua_setfield(L: P, idx: number, k: P): void;
  _lua_setglobal(L: P, name: P): void;
} & Record<`_luaopen_${'base' | 'string' | 'table' | 'math' | 'utf8' | 'coroutine'}`, (L: P) => number>;

/** Supplies the initialised wasmoon module. The edge passes one built from a precompiled WebAssembly.Module. */
export type LuaWasmLoader = () => Promise<Pick<LuaWasm, 'module'>>;

// Loaded lazily so that importing core/lua costs nothing where wasmoon's own loader
// cannot run (workerd): there the caller injects a loader instead.
export const defaultWasmLoader: LuaWasmLoader = async () => {
  const { LuaFactory } = await import('wasmoon');
  return new LuaFactory().getLuaModule();
};
