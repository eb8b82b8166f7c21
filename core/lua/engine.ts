import { LuaError, LuaMemoryError, LuaRuntimeError, LuaSyntaxError, LuaTimeoutError } from './errors';
import { coreHost, type RunState } from './host';
import { ioHost } from './host-io';
import { PRELUDE } from './prelude';
import { createVm, KILL_MESSAGES, type Vm } from './runtime';
import { defaultWasmLoader, LUA_ERRMEM, LUA_OK, LUA_YIELD, T_NUMBER, T_STRING, type Em, type LuaWasmLoader } from './wasm-api';
import { DEFAULT_LIMITS, type LuaLimits, type LuaServices } from './types';

// One fresh Lua state per run (~40 µs to create; see docs/LUA.md for the figures): no
// global, metatable or library change can leak between runs or configs, and a killed
// run leaves nothing behind. Compiled chunks are cached as bytecode keyed by source.

export type LuaEngineOptions = {
  /** Where the WASM comes from; defaults to wasmoon's own loader (Node). */
  loadWasm?: LuaWasmLoader;
  limits?: Partial<LuaLimits>;
  /** Compiled scripts kept (LRU). */
  cacheEntries?: number;
  /** Sum of the memory of all live states; allocations beyond it fail like the per-state cap. */
  maxTotalMemoryMb?: number;
};

export type RunSpec = {
  code: string;
  mode: RunState['mode'];
  input: { request: Record<string, unknown>; webhook?: Record<string, unknown> };
  services?: LuaServices;
  limits?: Partial<LuaLimits>;
  emit?: RunState['emit'];
};

/** What the runners (delivery, transformer) accept besides their input. */
export type RunOptions = {
  /** Defaults to the process-wide engine (Node loader). */
  engine?: LuaEngine;
  services?: LuaServices;
  limits?: Partial<LuaLimits>;
};

export type RunOutcome = { finished: unknown[] | undefined; cpuMs: number };

export type LuaEngine = {
  readonly limits: LuaLimits;
  /** Compiles only (upload-time validation). Throws LuaSyntaxError with Lua's line number. */
  checkSyntax(code: string): Promise<void>;
  run(spec: RunSpec): Promise<RunOutcome>;
};

const MB = 1024 * 1024;

/** A loaded WASM instance with the prelude compiled once; every state loads its bytecode. */
type LoadedVm = { vm: Vm; prelude: Uint8Array };
/** Compiled scripts as bytecode keyed by source, oldest first (LRU by re-insertion). */
type ScriptCache = { entries: Map<string, Uint8Array>; max: number };
/** One run in progress: what every stage of it reads and the CPU time it has used so far. */
type Run = { vm: Vm; s: RunState; lim: LuaLimits; cpuMs: number; wallDeadline: number };

export const createLuaEngine = (opts: LuaEngineOptions = {}): LuaEngine => {
  const limits: LuaLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const cache: ScriptCache = { entries: new Map(), max: opts.cacheEntries ?? 256 };
  let vmPromise: Promise<LoadedVm> | undefined;
  const getVm = (): Promise<LoadedVm> =>
    (vmPromise ??= loadVm(opts, limits).catch((e: unknown) => {
      vmPromise = undefined; // a failed load is retried by the next run, not cached
      throw e;
    }));

  const run = async (spec: RunSpec): Promise<RunOutcome> => runScript(await getVm(), cache, { ...limits, ...spec.limits }, spec);
  const checkSyntax = async (code: string): Promise<void> => compileOnly((await getVm()).vm, cache, limits, code);
  return { limits, run, checkSyntax };
};

const loadVm = async (opts: LuaEngineOptions, limits: LuaLimits): Promise<LoadedVm> => {
  const w = await (opts.loadWasm ?? defaultWasmLoader)();
  const vm = createVm<RunState>(w.module as unknown as Em, { ...coreHost, ...ioHost }, { maxTotalBytes: (opts.maxTotalMemoryMb ?? 1024) * MB });
  const s = blankState('delivery', {}, limits);
  const L = vm.newState(s);
  try {
    if (vm.load(L, PRELUDE, 't', 'howk') !== LUA_OK) throw new Error(`prelude: ${vm.readString(L, -1)}`);
    return { vm, prelude: vm.dump(L) };
  } finally {
    vm.closeState(s);
  }
};

/** Leaves the compiled script on the stack, or throws LuaSyntaxError. */
const loadScript = (vm: Vm, cache: ScriptCache, s: RunState, code: string): void => {
  const hit = cache.entries.get(code);
  if (hit) {
    cache.entries.delete(code); // LRU: re-inserted as newest
    cache.entries.set(code, hit);
    if (vm.load(s.L, hit, 'b') === LUA_OK) return;
    vm.pop(s.L, 1);
  }
  // Mode 't': uploaded scripts are source text only, never (forgeable) bytecode.
  const status = vm.load(s.L, code, 't');
  if (status === LUA_ERRMEM) throw new LuaMemoryError(s.memMax);
  if (status !== LUA_OK) throw new LuaSyntaxError(vm.readString(s.L, -1) ?? 'syntax error');
  if (cache.entries.size >= cache.max) cache.entries.delete(cache.entries.keys().next().value as string);
  cache.entries.set(code, vm.dump(s.L));
};

const failure = (vm: Vm, s: RunState, status: number): LuaError => {
  if (s.killed === 'timeout') {
    return new LuaTimeoutError(
      s.instrLeft < 0 ? `script timeout: instruction budget of ${s.limits.maxInstructions} exceeded` : `${KILL_MESSAGES.timeout} (${s.limits.timeoutMs} ms)`,
    );
  }
  const t = vm.type(s.L, -1);
  const message = t === T_STRING || t === T_NUMBER ? vm.readString(s.L, -1)! : `(error object is a ${t === 0 ? 'nil' : 'non-string'} value)`;
  if (s.killed === 'memory' || status === LUA_ERRMEM || (s.memHit && message.includes(KILL_MESSAGES.memory))) return new LuaMemoryError(s.memMax);
  // Reporting runs uncapped (it allocates outside a protected call) and killed (no script code may run meanwhile).
  s.memMax = Infinity;
  s.killed = 'timeout';
  const tb = vm.traceback(s);
  const frames = tb
    ?.split('\n')
    .filter((l) => l.includes('script:'))
    .map((l) => l.trim());
  return new LuaRuntimeError(message, frames?.length ? frames.join('\n') : undefined);
};

const runScript = async ({ vm, prelude }: LoadedVm, cache: ScriptCache, lim: LuaLimits, spec: RunSpec): Promise<RunOutcome> => {
  const s = blankState(spec.mode, spec.services ?? {}, lim);
  s.input = spec.input;
  s.emit = spec.emit;
  const L = vm.newState(s);
  const run: Run = { vm, s, lim, cpuMs: 0, wallDeadline: performance.now() + lim.wallTimeoutMs };
  try {
    startDriver(run, L, prelude, spec.mode);
    loadScript(vm, cache, s, spec.code);
    await driveToEnd(run);
    return { finished: s.finished, cpuMs: run.cpuMs };
  } finally {
    s.abort.abort(new Error('script finished'));
    vm.closeState(s);
  }
};

// CPU time is counted only while Lua runs; each slice gets what is left of the budget.
// A slice that overran without the hook noticing (a long C call, e.g. a backtracking
// pattern, then fewer than 1000 instructions) is a timeout too: the deadline is the contract.
const slice = <T>(run: Run, fn: () => T): T => {
  const t0 = performance.now();
  run.s.sliceDeadline = t0 + (run.lim.timeoutMs - run.cpuMs);
  try {
    return fn();
  } finally {
    run.cpuMs += performance.now() - t0;
    if (run.cpuMs > run.lim.timeoutMs) run.s.killed ??= 'timeout';
  }
};

/** Runs the prelude on L and moves the driver it returns onto the script's own thread, which becomes s.L. */
const startDriver = (run: Run, L: number, prelude: Uint8Array, mode: RunState['mode']): void => {
  const { vm, s, lim } = run;
  // The script runs in a thread of its own, anchored at the bottom of L's stack. A thread
  // stopped by the deadline hook keeps its hooks off (lua_resume does not restore them):
  // as the main thread, lua_close would then run its pending __close handlers unbounded;
  // a dead side thread is freed without running them.
  const T = vm.em._lua_newthread(L);
  if (vm.load(L, prelude, 'b', 'howk') !== LUA_OK) throw new Error('prelude failed to load');
  // Arguments are pushed before the cap is set: outside a protected call a refused
  // allocation would be a panic. Everything after this runs protected.
  vm.pushHostTable(L);
  vm.pushString(L, mode);
  vm.em._lua_pushinteger(L, BigInt(lim.maxStringBytes));
  s.memMax = lim.memoryLimitMb * MB;
  const ps = slice(run, () => vm.pcall(s, 3, 1));
  if (ps !== LUA_OK || s.killed) throw failure(vm, s, ps);
  vm.em._lua_xmove(L, T, 1); // the driver
  s.L = T;
};

/** Resumes the driver(main) until it returns, awaiting each host call it yields on. */
const driveToEnd = async (run: Run): Promise<void> => {
  const { vm, s, lim } = run;
  let nargs = 1; // driver(main)
  for (;;) {
    const { status, results } = slice(run, () => vm.resume(s, nargs));
    if (status === LUA_OK && !s.killed) return;
    if (status !== LUA_YIELD || s.killed) throw failure(vm, s, status);
    const id = results === 2 && vm.type(s.L, -1) === T_NUMBER ? Number(vm.readString(s.L, -1)) : NaN;
    vm.pop(s.L, results);
    const pending = s.tickets.get(id);
    if (!pending) throw new LuaRuntimeError('coroutine.yield outside a coroutine is not allowed');
    s.tickets.delete(id);
    await untilDeadline(pending, run.wallDeadline, lim.wallTimeoutMs);
    nargs = 0;
  }
};

/** Upload-time validation: compiles under the run memory cap, runs nothing. */
const compileOnly = (vm: Vm, cache: ScriptCache, limits: LuaLimits, code: string): void => {
  const s = blankState('delivery', {}, limits);
  vm.newState(s);
  s.memMax = limits.memoryLimitMb * MB;
  try {
    loadScript(vm, cache, s, code);
  } finally {
    vm.closeState(s);
  }
};

const blankState = (mode: RunState['mode'], services: LuaServices, limits: LuaLimits): RunState => ({
  L: 0,
  main: 0,
  slot: 0,
  memUsed: 0,
  memMax: Infinity,
  sliceDeadline: Infinity,
  instrLeft: limits.maxInstructions ?? Infinity,
  killed: undefined,
  memHit: false,
  retryPending: false,
  mode,
  refs: { null: 0, arrayMt: 0 },
  input: undefined,
  services,
  limits,
  tickets: new Map(),
  results: new Map(),
  nextTicket: 0,
  hostCalls: 0,
  logLines: 0,
  abort: new AbortController(),
});

/** Awaits a host call, bounded by the run's wall-clock limit. */
const untilDeadline = async (p: Promise<void>, deadline: number, wallMs: number): Promise<void> => {
  const left = deadline - performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LuaTimeoutError(`script timeout: wall-clock limit of ${wallMs} ms exceeded while waiting on host calls`)), Math.max(0, left));
  });
  try {
    await Promise.race([p, expired]);
  } finally {
    clearTimeout(timer);
  }
};

let shared: LuaEngine | undefined;
/** The process-wide engine with default options (Node). Hosts that need another loader create their own. */
export const defaultLuaEngine = (): LuaEngine => (shared ??= createLuaEngine());

export const checkSyntax = (code: string, engine: LuaEngine = defaultLuaEngine()): Promise<void> => engine.checkSyntax(code);
