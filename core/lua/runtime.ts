import { HOOK_EVERY, KILL_MESSAGES, MEMORY_KILL_SHARE, type VmState } from './state';
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

export type Vm = ReturnType<typeof createVm>;

export const createVm = <S extends VmState>(em: Em, hostFns: Record<string, HostFn<S>>, opts: { maxTotalBytes: number }) => {
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  const lenPtr = em._malloc(8);
  let scratch = em._malloc(4096);
  let scratchSize = 4096;
  const ensureScratch = (n: number): number => {
    if (n > scratchSize) {
      em._free(scratch);
      scratchSize = Math.max(n, scratchSize * 2);
      scratch = em._malloc(scratchSize);
    }
    return scratch;
  };
  const cstrings = new Map<string, number>();
  const cstr = (s: string): number => {
    let p = cstrings.get(s);
    if (p === undefined) {
      const b = enc.encode(s + '\0');
      p = em._malloc(b.length);
      em.HEAPU8.set(b, p);
      cstrings.set(s, p);
    }
    return p;
  };

  // Per-state accounting is found through the allocator's `ud` argument (a slot
  // number); the hook and host functions use `active`, set around every entry into Lua
  // (JS is single-threaded and a host function never starts another Lua run).
  const slots: (S | undefined)[] = [];
  let active: S | undefined;
  let totalUsed = 0;

  const alloc = em.addFunction((ud: number, ptr: number, osize: number, nsize: number) => {
    const s = slots[ud];
    if (nsize === 0) {
      if (ptr) {
        if (s) s.memUsed -= osize;
        totalUsed -= osize;
        em._free(ptr);
      }
      return 0;
    }
    // osize is a type tag, not a size, when ptr is NULL (lua_Alloc contract).
    const delta = ptr ? nsize - osize : nsize;
    // An uncapped state (setup, error reporting: unprotected calls) is never refused,
    // because a refusal there would be a Lua panic, which aborts the whole WASM instance.
    if (delta > 0 && s && s.memMax !== Infinity) {
      const over = s.memUsed + delta > s.memMax || totalUsed + delta > opts.maxTotalBytes;
      if (s.retryPending) {
        // Lua retries a refused allocation after a full GC. If that GC left the state
        // near its cap, the script is killed now: otherwise a growing table would buy a
        // few KB per full collection and spend its whole CPU budget collecting.
        s.retryPending = false;
        if (over || s.memUsed + delta > s.memMax * MEMORY_KILL_SHARE) {
          s.killed ??= 'memory';
          return 0;
        }
      } else if (over) {
        s.memHit = true;
        s.retryPending = true;
        return 0;
      }
    }
    const p = em._realloc(ptr, nsize);
    if (p) {
      if (s) s.memUsed += delta;
      totalUsed += delta;
    }
    return p;
  }, 'iiiii');

  // Inside the VM: runs every HOOK_EVERY instructions of any coroutine of the state
  // (lua_newthread copies the hook), so `while true do end` cannot escape it.
  // Once killed, every later check raises again, which is what makes the timeout
  // uncatchable together with the pcall wrappers of the prelude.
  const hook = em.addFunction((L: number) => {
    const s = active;
    if (!s) return;
    s.instrLeft -= HOOK_EVERY;
    if (s.killed || s.instrLeft < 0 || performance.now() > s.sliceDeadline) {
      s.killed ??= 'timeout';
      pushString(L, KILL_MESSAGES[s.killed]);
      em._lua_error(L);
    }
  }, 'vii');

  let dumpChunks: Uint8Array[] = [];
  const writer = em.addFunction((_L: number, p: number, sz: number) => {
    dumpChunks.push(em.HEAPU8.slice(p, p + sz));
    return 0;
  }, 'iiiii');

  const pushString = (L: number, s: string): void => {
    const p = ensureScratch(s.length * 3 + 1);
    const { written } = enc.encodeInto(s, em.HEAPU8.subarray(p, p + scratchSize));
    em._lua_pushlstring(L, p, written);
  };
  const pushBytes = (L: number, b: Uint8Array): void => {
    const p = ensureScratch(b.length + 1);
    em.HEAPU8.set(b, p);
    em._lua_pushlstring(L, p, b.length);
  };
  /** Bytes of the string (or number, converted in place) at idx. Never call on table keys during lua_next. */
  const readBytes = (L: number, idx: number): Uint8Array | undefined => {
    const p = em._lua_tolstring(L, idx, lenPtr);
    if (!p) return undefined;
    return em.HEAPU8.subarray(p, p + em.HEAPU32[lenPtr >> 2]!);
  };
  const readString = (L: number, idx: number): string | undefined => {
    const b = readBytes(L, idx);
    return b && dec.decode(b);
  };

  /** "script:<line>: " of the nearest script frame calling a host function (skipping prelude wrappers). */
  const where = (L: number): string => {
    for (const level of [1, 2]) {
      em._luaL_where(L, level);
      const w = readString(L, -1) ?? '';
      em._lua_settop(L, -2);
      if (w.startsWith('script:')) return w;
    }
    return '';
  };

  const hostPtrs = new Map<string, number>();
  for (const [name, fn] of Object.entries(hostFns)) {
    hostPtrs.set(
      name,
      em.addFunction((L: number) => {
        try {
          return fn(vm, L, active!);
        } catch (e) {
          // A number is emscripten's longjmp (lua_error): let it unwind to Lua.
          if (typeof e === 'number') throw e;
          pushString(L, where(L) + (e instanceof Error ? e.message : String(e)));
          return em._lua_error(L);
        }
      }, 'ii'),
    );
  }

  const vm = {
    em,
    pushString,
    pushBytes,
    readString,
    readBytes,
    type: (L: number, idx: number): number => em._lua_type(L, idx),
    pop: (L: number, n: number): void => em._lua_settop(L, -n - 1),
    /** Text of the value at idx if it is a string or number; never invokes metamethods. */
    text: (L: number, idx: number): string | undefined => {
      const t = em._lua_type(L, idx);
      return t === T_STRING || t === T_NUMBER ? readString(L, idx) : undefined;
    },

    newState(s: S): number {
      let slot = slots.indexOf(undefined);
      if (slot < 0) slot = slots.push(undefined) - 1;
      slots[slot] = s;
      const L: number = em._lua_newstate(alloc, slot);
      if (!L) {
        slots[slot] = undefined;
        throw new Error('lua_newstate failed (out of memory)');
      }
      s.L = L;
      s.main = L;
      s.slot = slot;
      em._luaopen_base(L);
      vm.pop(L, 1);
      for (const lib of ['string', 'table', 'math', 'utf8', 'coroutine'] as const) {
        em[`_luaopen_${lib}`](L);
        em._lua_setglobal(L, cstr(lib));
      }
      em._lua_sethook(L, hook, MASK_COUNT, HOOK_EVERY);
      return L;
    },

    closeState(s: S): void {
      // Nothing of the script may run during lua_close: no object is ever marked for finalization
      // (prelude), and the script thread's pending __close handlers are not run for a side thread.
      s.killed ??= 'timeout';
      const prev = active;
      active = s;
      try {
        em._lua_close(s.main);
      } finally {
        active = prev;
        slots[s.slot] = undefined;
      }
    },

    /** Pushes a table of the host functions (the prelude's `H`). */
    pushHostTable(L: number): void {
      em._lua_createtable(L, 0, hostPtrs.size);
      for (const [name, p] of hostPtrs) {
        em._lua_pushcclosure(L, p, 0);
        em._lua_setfield(L, -2, cstr(name));
      }
    },

    /** Compiles source ('t') or our own cached bytecode ('b'); never user-supplied bytecode. */
    /** Chunk names prefix Lua's messages ("script:3: ..."); the prelude is "howk" so its frames are told apart. */
    load(L: number, chunk: string | Uint8Array, mode: 't' | 'b', name = 'script'): number {
      const bytes = typeof chunk === 'string' ? enc.encode(chunk) : chunk;
      const p = ensureScratch(bytes.length + 1);
      em.HEAPU8.set(bytes, p);
      return em._luaL_loadbufferx(L, p, bytes.length, cstr(`=${name}`), cstr(mode));
    },

    /** Bytecode of the function on top of the stack (debug info kept: error lines survive). */
    dump(L: number): Uint8Array {
      dumpChunks = [];
      em._lua_dump(L, writer, 0, 0);
      const out = new Uint8Array(dumpChunks.reduce((n, c) => n + c.length, 0));
      let off = 0;
      for (const c of dumpChunks) {
        out.set(c, off);
        off += c.length;
      }
      dumpChunks = [];
      return out;
    },

    /** Runs L (as a coroutine) until it yields, returns or fails. `results` gets the count of yielded values. */
    resume(s: S, nargs: number): { status: number; results: number } {
      const prev = active;
      active = s;
      try {
        const status: number = em._lua_resume(s.L, 0, nargs, lenPtr);
        return { status, results: em.HEAPU32[lenPtr >> 2]! };
      } finally {
        active = prev;
      }
    },

    /** A protected call of the function below nargs arguments, for code that must not yield. */
    pcall(s: S, nargs: number, nresults: number): number {
      const prev = active;
      active = s;
      try {
        return em._lua_pcallk(s.L, nargs, nresults, 0, 0, 0);
      } finally {
        active = prev;
      }
    },

    /** Lua's traceback of a failed state (its stack is kept after an error). */
    traceback(s: S): string | undefined {
      const prev = active;
      active = s;
      try {
        em._luaL_traceback(s.L, s.L, 0, 0);
        const t = readString(s.L, -1);
        vm.pop(s.L, 1);
        return t;
      } finally {
        active = prev;
      }
    },

    get totalUsed(): number {
      return totalUsed;
    },
  };
  return vm;
};
