import { type VmState } from './state';
import { type Em } from './wasm-api';

// What every part of one Lua runtime (runtime.ts) shares: the WASM instance, a scratch
// buffer for strings crossing into it, and the accounting of its live states.

export type VmContext = {
  em: Em;
  enc: TextEncoder;
  dec: TextDecoder;
  /** An 8-byte out-parameter (string lengths, yielded-value counts). */
  lenPtr: number;
  scratch: number;
  scratchSize: number;
  /** C strings that live as long as the instance (names of libraries, fields, chunks). */
  cstrings: Map<string, number>;
  /**
   * Per-state accounting is found through the allocator's `ud` argument (a slot number);
   * the hook and host functions use `active`, set around every entry into Lua (JS is
   * single-threaded and a host function never starts another Lua run).
   */
  slots: (VmState | undefined)[];
  active: VmState | undefined;
  totalUsed: number;
  maxTotalBytes: number;
  /** What lua_dump's writer has received so far. */
  dumpChunks: Uint8Array[];
};

export const createVmContext = (em: Em, maxTotalBytes: number): VmContext => ({
  em,
  enc: new TextEncoder(),
  dec: new TextDecoder(),
  lenPtr: em._malloc(8),
  scratch: em._malloc(4096),
  scratchSize: 4096,
  cstrings: new Map(),
  slots: [],
  active: undefined,
  totalUsed: 0,
  maxTotalBytes,
  dumpChunks: [],
});

/** A scratch pointer with room for n bytes (the buffer only grows). */
export const ensureScratch = (c: VmContext, n: number): number => {
  if (n > c.scratchSize) {
    c.em._free(c.scratch);
    c.scratchSize = Math.max(n, c.scratchSize * 2);
    c.scratch = c.em._malloc(c.scratchSize);
  }
  return c.scratch;
};

/** A NUL-terminated copy of s, allocated once per distinct string. */
export const cstr = (c: VmContext, s: string): number => {
  let p = c.cstrings.get(s);
  if (p === undefined) {
    const b = c.enc.encode(s + '\0');
    p = c.em._malloc(b.length);
    c.em.HEAPU8.set(b, p);
    c.cstrings.set(s, p);
  }
  return p;
};

export const pushString = (c: VmContext, L: number, s: string): void => {
  const p = ensureScratch(c, s.length * 3 + 1);
  const { written } = c.enc.encodeInto(s, c.em.HEAPU8.subarray(p, p + c.scratchSize));
  c.em._lua_pushlstring(L, p, written);
};

export const pushBytes = (c: VmContext, L: number, b: Uint8Array): void => {
  const p = ensureScratch(c, b.length + 1);
  c.em.HEAPU8.set(b, p);
  c.em._lua_pushlstring(L, p, b.length);
};

/** Bytes of the string (or number, converted in place) at idx. Never call on table keys during lua_next. */
export const readBytes = (c: VmContext, L: number, idx: number): Uint8Array | undefined => {
  const p = c.em._lua_tolstring(L, idx, c.lenPtr);
  if (!p) return undefined;
  return c.em.HEAPU8.subarray(p, p + c.em.HEAPU32[c.lenPtr >> 2]!);
};

export const readString = (c: VmContext, L: number, idx: number): string | undefined => {
  const b = readBytes(c, L, idx);
  return b && c.dec.decode(b);
};

/** "script:<line>: " of the nearest script frame calling a host function (skipping prelude wrappers). */
export const where = (c: VmContext, L: number): string => {
  for (const level of [1, 2]) {
    c.em._luaL_where(L, level);
    const w = readString(c, L, -1) ?? '';
    c.em._lua_settop(L, -2);
    if (w.startsWith('script:')) return w;
  }
  return '';
};

/** Runs fn with s as the state the hook and host functions see, restoring the previous one after. */
export const withActive = <T>(c: VmContext, s: VmState, fn: () => T): T => {
  const prev = c.active;
  c.active = s;
  try {
    return fn();
  } finally {
    c.active = prev;
  }
};
