import { type Vm } from './runtime';
import { REGISTRY, T_BOOLEAN, T_NIL, T_NUMBER, T_STRING, T_TABLE } from './wasm-api';

// JS <-> Lua value conversion straight through the C API (no proxies): JSON-shaped
// data only. Tables are read with raw access (lua_next, no metamethods), so a script
// cannot run code of its own while the host reads its values.

/** Registry references of the per-state sentinels the prelude creates. */
export type Refs = { null: number; arrayMt: number };

const MAX_DEPTH = 100;

const pushRef = (vm: Vm, L: number, ref: number): void => void vm.em._lua_rawgeti(L, REGISTRY, BigInt(ref));

/** JSON null becomes json.null; arrays get the private array metatable (json.array_mt stands for it) so an empty one encodes back as []. */
export const pushJs = (vm: Vm, L: number, v: unknown, refs: Refs, depth = 0): void => {
  const em = vm.em;
  switch (typeof v) {
    case 'undefined':
      em._lua_pushnil(L);
      return;
    case 'boolean':
      em._lua_pushboolean(L, v ? 1 : 0);
      return;
    case 'number':
      // Integral values stay Lua integers, so `tostring(amount)` prints "1000", not "1000.0".
      if (Number.isSafeInteger(v)) em._lua_pushinteger(L, BigInt(v));
      else em._lua_pushnumber(L, v);
      return;
    case 'bigint':
      em._lua_pushinteger(L, v);
      return;
    case 'string':
      vm.pushString(L, v);
      return;
    case 'object':
      break;
    default:
      throw new Error(`cannot pass a ${typeof v} to Lua`);
  }
  if (v === null) return pushRef(vm, L, refs.null);
  if (v instanceof Uint8Array) return vm.pushBytes(L, v);
  if (depth > MAX_DEPTH) throw new Error('value nested too deeply');
  if (!em._lua_checkstack(L, 4)) throw new Error('Lua stack overflow');
  if (Array.isArray(v)) {
    em._lua_createtable(L, v.length, 0);
    for (let i = 0; i < v.length; i++) {
      pushJs(vm, L, v[i], refs, depth + 1);
      em._lua_rawseti(L, -2, BigInt(i + 1));
    }
    pushRef(vm, L, refs.arrayMt);
    em._lua_setmetatable(L, -2);
    return;
  }
  const entries = Object.entries(v as Record<string, unknown>);
  em._lua_createtable(L, 0, entries.length);
  for (const [k, x] of entries) {
    vm.pushString(L, k);
    pushJs(vm, L, x, refs, depth + 1);
    em._lua_rawset(L, -3);
  }
};

const readNumber = (vm: Vm, L: number, idx: number): number | bigint => {
  const em = vm.em;
  if (!em._lua_isinteger(L, idx)) return em._lua_tonumberx(L, idx, 0) as number;
  const big = em._lua_tointegerx(L, idx, 0) as bigint;
  // int64 beyond 2^53 stays exact (bigint) so json.encode writes every digit.
  return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
};

const isRef = (vm: Vm, L: number, idx: number, ref: number): boolean => {
  pushRef(vm, L, ref);
  const eq = vm.em._lua_rawequal(L, idx, -1) as number;
  vm.pop(L, 1);
  return eq !== 0;
};

const hasMetatable = (vm: Vm, L: number, idx: number, ref: number): boolean => {
  if (!vm.em._lua_getmetatable(L, idx)) return false;
  pushRef(vm, L, ref);
  const eq = vm.em._lua_rawequal(L, -1, -2) as number;
  vm.pop(L, 2);
  return eq !== 0;
};

const TYPE_NAMES = ['nil', 'boolean', 'lightuserdata', 'number', 'string', 'table', 'function', 'userdata', 'thread'];

/**
 * The Lua value at idx as JSON-shaped JS: nil → undefined, json.null → null, a table
 * with keys 1..n (or json.array_mt) → array, any other table → object (number keys
 * become strings). Functions, userdata, NaN and cycles are refused.
 */
export const readLua = (vm: Vm, L: number, idx: number, refs: Refs, depth = 0): unknown => {
  const em = vm.em;
  const t = vm.type(L, idx);
  if (t === T_NIL || t < 0) return undefined;
  if (t === T_BOOLEAN) return em._lua_toboolean(L, idx) !== 0;
  if (t === T_NUMBER) return readNumber(vm, L, idx);
  if (t === T_STRING) return vm.readString(L, idx);
  if (t !== T_TABLE) throw new Error(`cannot convert a ${TYPE_NAMES[t] ?? 'userdata'} value`);
  if (depth > MAX_DEPTH) throw new Error('table nested too deeply (or cyclic)');
  if (!em._lua_checkstack(L, 4)) throw new Error('Lua stack overflow');
  const abs: number = em._lua_absindex(L, idx);
  if (isRef(vm, L, abs, refs.null)) return null;
  const markedArray = hasMetatable(vm, L, abs, refs.arrayMt);

  const keys: (string | number)[] = [];
  const values: unknown[] = [];
  let maxInt = 0;
  let allInts = true;
  em._lua_pushnil(L);
  while (em._lua_next(L, abs)) {
    const kt = vm.type(L, -2);
    // Never lua_tolstring a number key: it would convert it in place and break lua_next.
    if (kt === T_STRING) {
      keys.push(vm.readString(L, -2)!);
      allInts = false;
    } else if (kt === T_NUMBER) {
      const n = Number(readNumber(vm, L, -2));
      keys.push(n);
      if (Number.isInteger(n) && n >= 1) maxInt = Math.max(maxInt, n);
      else allInts = false;
    } else {
      throw new Error(`cannot convert a table with ${TYPE_NAMES[kt] ?? 'userdata'} keys`);
    }
    values.push(readLua(vm, L, -1, refs, depth + 1));
    vm.pop(L, 1);
  }
  const sequence = allInts && keys.length > 0 && maxInt === keys.length;
  if (markedArray || sequence) {
    if (!allInts) throw new Error('an array (json.array_mt) can only have integer keys');
    if (maxInt > keys.length * 2 + 1000) throw new Error('array is too sparse');
    const arr: unknown[] = new Array(maxInt).fill(null);
    keys.forEach((k, i) => (arr[(k as number) - 1] = values[i] ?? null));
    return arr;
  }
  // Keys in code-unit order, not lua_next's: a Lua state seeds its string hashes, so the same
  // table would come out in another order from another state of the pool, and the JSON text
  // of a transformer's webhook (what its signature and idempotency fingerprint cover) with it.
  const order = keys.map((k, i) => [String(k), i] as const).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const obj: Record<string, unknown> = {};
  for (const [k, i] of order) obj[k] = values[i];
  return obj;
};

/** JSON text of a readLua value; bigint keeps all its digits. */
export const stringifyJson = (v: unknown): string => {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      if (!Number.isFinite(v)) throw new Error('cannot encode NaN or infinity as JSON');
      return String(v);
    case 'bigint':
      return v.toString();
    case 'boolean':
      return v ? 'true' : 'false';
    case 'undefined':
      return 'null';
    default:
      break;
  }
  if (v === null) return 'null';
  if (Array.isArray(v)) return `[${v.map(stringifyJson).join(',')}]`;
  const parts: string[] = [];
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (x !== undefined) parts.push(`${JSON.stringify(k)}:${stringifyJson(x)}`);
  }
  return `{${parts.join(',')}}`;
};

/** Deep equality of JSON values (number vs bigint by value). */
export const jsonEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true;
  const ta = typeof a,
    tb = typeof b;
  if ((ta === 'number' || ta === 'bigint') && (tb === 'number' || tb === 'bigint')) return Number(a) === Number(b);
  if (ta !== 'object' || tb !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a as object).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b as object).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
};
