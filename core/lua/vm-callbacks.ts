import { HOOK_EVERY, KILL_MESSAGES, MEMORY_KILL_SHARE, type VmState } from './state';
import { pushString, where, type VmContext } from './vm-context';

// The callbacks Lua calls back into JS, registered ONCE per WASM instance (see runtime.ts
// for why): the allocator, the instruction hook, the dump writer and the host functions.

/** lua_Alloc over emscripten's heap, enforcing the per-state and instance-wide memory caps. */
export const registerAllocator = (c: VmContext): number =>
  c.em.addFunction((ud: number, ptr: number, osize: number, nsize: number) => {
    const s = c.slots[ud];
    if (nsize === 0) {
      if (ptr) {
        if (s) s.memUsed -= osize;
        c.totalUsed -= osize;
        c.em._free(ptr);
      }
      return 0;
    }
    // osize is a type tag, not a size, when ptr is NULL (lua_Alloc contract).
    const delta = ptr ? nsize - osize : nsize;
    if (delta > 0 && s && refuses(c, s, delta)) return 0;
    const p = c.em._realloc(ptr, nsize);
    if (p) {
      if (s) s.memUsed += delta;
      c.totalUsed += delta;
    }
    return p;
  }, 'iiiii');

/** Whether growing s by delta bytes is refused; marks the state hit or killed on the way. */
const refuses = (c: VmContext, s: VmState, delta: number): boolean => {
  // An uncapped state (setup, error reporting: unprotected calls) is never refused,
  // because a refusal there would be a Lua panic, which aborts the whole WASM instance.
  if (s.memMax === Infinity) return false;
  const over = s.memUsed + delta > s.memMax || c.totalUsed + delta > c.maxTotalBytes;
  if (s.retryPending) {
    // Lua retries a refused allocation after a full GC. If that GC left the state
    // near its cap, the script is killed now: otherwise a growing table would buy a
    // few KB per full collection and spend its whole CPU budget collecting.
    s.retryPending = false;
    if (over || s.memUsed + delta > s.memMax * MEMORY_KILL_SHARE) {
      s.killed ??= 'memory';
      return true;
    }
    return false;
  }
  if (over) {
    s.memHit = true;
    s.retryPending = true;
  }
  return over;
};

/**
 * Inside the VM: runs every HOOK_EVERY instructions of any coroutine of the state
 * (lua_newthread copies the hook), so `while true do end` cannot escape it.
 * Once killed, every later check raises again, which is what makes the timeout
 * uncatchable together with the pcall wrappers of the prelude.
 */
export const registerHook = (c: VmContext): number =>
  c.em.addFunction((L: number) => {
    const s = c.active;
    if (!s) return;
    s.instrLeft -= HOOK_EVERY;
    if (s.killed || s.instrLeft < 0 || performance.now() > s.sliceDeadline) {
      s.killed ??= 'timeout';
      pushString(c, L, KILL_MESSAGES[s.killed]);
      c.em._lua_error(L);
    }
  }, 'vii');

/** lua_Writer collecting a dump into c.dumpChunks. */
export const registerWriter = (c: VmContext): number =>
  c.em.addFunction((_L: number, p: number, sz: number) => {
    c.dumpChunks.push(c.em.HEAPU8.slice(p, p + sz));
    return 0;
  }, 'iiiii');

/** One C function per host function, each turning a JS throw into a Lua error at the script's line. */
export const registerHostFns = <V, S extends VmState>(c: VmContext, vm: V, hostFns: Record<string, (vm: V, L: number, s: S) => number>): Map<string, number> => {
  const ptrs = new Map<string, number>();
  for (const [name, fn] of Object.entries(hostFns)) {
    ptrs.set(
      name,
      c.em.addFunction((L: number) => {
        try {
          return fn(vm, L, c.active! as S);
        } catch (e) {
          // A number is emscripten's longjmp (lua_error): let it unwind to Lua.
          if (typeof e === 'number') throw e;
          pushString(c, L, where(c, L) + (e instanceof Error ? e.message : String(e)));
          return c.em._lua_error(L);
        }
      }, 'ii'),
    );
  }
  return ptrs;
};
