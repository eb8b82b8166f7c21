import { HOOK_EVERY, type VmState } from './state';
import { registerAllocator, registerHook, registerHostFns, registerWriter } from './vm-callbacks';
import { createVmContext, cstr, ensureScratch, pushBytes, pushString, readBytes, readString, withActive, type VmContext } from './vm-context';
import { T_NUMBER, T_STRING, type Em } from './wasm-api';

// The loader types lived here first; edge/ imports them from this module.
export { defaultWasmLoader, type LuaWasmLoader } from './wasm-api';
export { KILL_MESSAGES, type KillReason, type VmState } from './state';

// The thin layer over the Lua C API compiled to WASM. wasmoon's high-level classes
// (LuaEngine, Global, type extensions) are not used: they register a JS wrapper per
// state (a run-time WASM compile per signature, refused by workerd) and convert values
// through proxies. Instead one runtime per WASM instance registers a fixed set of
// callbacks ONCE, with three of the four signatures workerd needs prebuilt anyway:
// 'iiiii' (allocator, dump writer), 'vii' (instruction hook), 'ii' (host functions).

const MASK_COUNT = 8;

/** A host function: reads its arguments from L and returns how many results it pushed. */
export type HostFn<S extends VmState> = (vm: Vm, L: number, s: S) => number;

export type Vm = {
  readonly em: Em;
  pushString(L: number, s: string): void;
  pushBytes(L: number, b: Uint8Array): void;
  readString(L: number, idx: number): string | undefined;
  /** Bytes of the string (or number, converted in place) at idx. Never call on table keys during lua_next. */
  readBytes(L: number, idx: number): Uint8Array | undefined;
  type(L: number, idx: number): number;
  pop(L: number, n: number): void;
  /** Text of the value at idx if it is a string or number; never invokes metamethods. */
  text(L: number, idx: number): string | undefined;
  /** A new state accounted to s, with the safe standard libraries and the deadline hook. */
  newState(s: VmState): number;
  closeState(s: VmState): void;
  /** Pushes a table of the host functions (the prelude's `H`). */
  pushHostTable(L: number): void;
  /**
   * Compiles source ('t') or our own cached bytecode ('b'); never user-supplied bytecode.
   * Chunk names prefix Lua's messages ("script:3: ..."); the prelude is "howk" so its frames are told apart.
   */
  load(L: number, chunk: string | Uint8Array, mode: 't' | 'b', name?: string): number;
  /** Bytecode of the function on top of the stack (debug info kept: error lines survive). */
  dump(L: number): Uint8Array;
  /** Runs L (as a coroutine) until it yields, returns or fails. `results` gets the count of yielded values. */
  resume(s: VmState, nargs: number): { status: number; results: number };
  /** A protected call of the function below nargs arguments, for code that must not yield. */
  pcall(s: VmState, nargs: number, nresults: number): number;
  /** Lua's traceback of a failed state (its stack is kept after an error). */
  traceback(s: VmState): string | undefined;
  readonly totalUsed: number;
};

/** The pointers of the callbacks registered once per instance. */
type Callbacks = { alloc: number; hook: number; writer: number; hostPtrs: Map<string, number> };

export const createVm = <S extends VmState>(em: Em, hostFns: Record<string, HostFn<S>>, opts: { maxTotalBytes: number }): Vm => {
  const c = createVmContext(em, opts.maxTotalBytes);
  const cb: Callbacks = { alloc: registerAllocator(c), hook: registerHook(c), writer: registerWriter(c), hostPtrs: new Map() };
  const vm: Vm = {
    em,
    pushString: (L, s) => pushString(c, L, s),
    pushBytes: (L, b) => pushBytes(c, L, b),
    readString: (L, idx) => readString(c, L, idx),
    readBytes: (L, idx) => readBytes(c, L, idx),
    type: (L, idx) => em._lua_type(L, idx),
    pop: (L, n) => em._lua_settop(L, -n - 1),
    text: (L, idx) => {
      const t = em._lua_type(L, idx);
      return t === T_STRING || t === T_NUMBER ? readString(c, L, idx) : undefined;
    },
    newState: (s) => newState(c, cb, s),
    closeState: (s) => closeState(c, s),
    pushHostTable: (L) => pushHostTable(c, cb.hostPtrs, L),
    load: (L, chunk, mode, name = 'script') => load(c, L, chunk, mode, name),
    dump: (L) => dump(c, cb.writer, L),
    resume: (s, nargs) =>
      withActive(c, s, () => {
        const status: number = em._lua_resume(s.L, 0, nargs, c.lenPtr);
        return { status, results: em.HEAPU32[c.lenPtr >> 2]! };
      }),
    pcall: (s, nargs, nresults) => withActive(c, s, () => em._lua_pcallk(s.L, nargs, nresults, 0, 0, 0)),
    traceback: (s) =>
      withActive(c, s, () => {
        em._luaL_traceback(s.L, s.L, 0, 0);
        const t = readString(c, s.L, -1);
        em._lua_settop(s.L, -2);
        return t;
      }),
    get totalUsed(): number {
      return c.totalUsed;
    },
  };
  cb.hostPtrs = registerHostFns(c, vm, hostFns);
  return vm;
};

const newState = (c: VmContext, cb: Callbacks, s: VmState): number => {
  const { em } = c;
  let slot = c.slots.indexOf(undefined);
  if (slot < 0) slot = c.slots.push(undefined) - 1;
  c.slots[slot] = s;
  const L: number = em._lua_newstate(cb.alloc, slot);
  if (!L) {
    c.slots[slot] = undefined;
    throw new Error('lua_newstate failed (out of memory)');
  }
  s.L = L;
  s.main = L;
  s.slot = slot;
  em._luaopen_base(L);
  em._lua_settop(L, -2);
  for (const lib of ['string', 'table', 'math', 'utf8', 'coroutine'] as const) {
    em[`_luaopen_${lib}`](L);
    em._lua_setglobal(L, cstr(c, lib));
  }
  em._lua_sethook(L, cb.hook, MASK_COUNT, HOOK_EVERY);
  return L;
};

const closeState = (c: VmContext, s: VmState): void => {
  // Nothing of the script may run during lua_close: no object is ever marked for finalization
  // (prelude), and the script thread's pending __close handlers are not run for a side thread.
  s.killed ??= 'timeout';
  try {
    withActive(c, s, () => c.em._lua_close(s.main));
  } finally {
    c.slots[s.slot] = undefined;
  }
};

const pushHostTable = (c: VmContext, hostPtrs: Map<string, number>, L: number): void => {
  c.em._lua_createtable(L, 0, hostPtrs.size);
  for (const [name, p] of hostPtrs) {
    c.em._lua_pushcclosure(L, p, 0);
    c.em._lua_setfield(L, -2, cstr(c, name));
  }
};

const load = (c: VmContext, L: number, chunk: string | Uint8Array, mode: 't' | 'b', name: string): number => {
  const bytes = typeof chunk === 'string' ? c.enc.encode(chunk) : chunk;
  const p = ensureScratch(c, bytes.length + 1);
  c.em.HEAPU8.set(bytes, p);
  return c.em._luaL_loadbufferx(L, p, bytes.length, cstr(c, `=${name}`), cstr(c, mode));
};

const dump = (c: VmContext, writer: number, L: number): Uint8Array => {
  c.dumpChunks = [];
  c.em._lua_dump(L, writer, 0, 0);
  const out = new Uint8Array(c.dumpChunks.reduce((n, ch) => n + ch.length, 0));
  let off = 0;
  for (const ch of c.dumpChunks) {
    out.set(ch, off);
    off += ch.length;
  }
  c.dumpChunks = [];
  return out;
};
