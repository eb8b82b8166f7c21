// What the VM layer (runtime.ts) keeps per Lua state, and the limits it enforces itself.

/** Instructions between two deadline checks: tens of µs of Lua, so the check is cheap and still fires promptly. */
export const HOOK_EVERY = 1000;
export type KillReason = 'timeout' | 'memory';
/** What a killed script sees raised (again and again: see the hook and the prelude's pcall wrappers). */
export const KILL_MESSAGES: Record<KillReason, string> = {
  timeout: 'script timeout: CPU deadline exceeded',
  memory: 'not enough memory',
};
/** After an emergency GC, a state still above this share of its cap is out of memory for good. */
export const MEMORY_KILL_SHARE = 0.75;

/** What the allocator and the hook need of a state; engine.ts extends it per run. */
export type VmState = {
  /** The thread Lua currently runs on (the script's own thread once it is loaded). */
  L: number;
  /** The state's main thread: what lua_close takes. */
  main: number;
  /** The allocator's `ud`: how it finds this state. */
  slot: number;
  memUsed: number;
  memMax: number;
  /** Wall time (performance.now) past which the current slice of Lua execution is killed. */
  sliceDeadline: number;
  instrLeft: number;
  /** Set once a limit is hit; from then on the script cannot continue, even under pcall. */
  killed: KillReason | undefined;
  /** The allocator refused memory at least once. */
  memHit: boolean;
  /** The last growth was refused: the next one is Lua's retry after its emergency full GC. */
  retryPending: boolean;
};
