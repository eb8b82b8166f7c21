import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { createLuaEngine, DEFAULT_LIMITS, LuaTimeoutError, type LuaEngine, type LuaLimits } from '../../../core/lua';
import type { RunOutcome, RunSpec } from '../../../core/lua/engine';
import { hostCall } from './host-calls';
import { fromWire, type FromWorker, type HostOp, type ToWorker } from './protocol';

// The Node implementation of core's LuaEngine port: every run executes in a worker thread
// (one run per thread at a time, up to `size` threads). The in-VM deadline stops scripts in
// the thread itself; the pool is the hard stop behind it: a run whose Lua keeps the thread
// busy past its CPU deadline (or whose whole run passes its wall-clock limit) by more than
// `marginMs` gets its thread terminated and replaced, whatever the script did (a long C
// call such as a backtracking pattern cannot be interrupted from inside the VM).

export type LuaPoolOptions = {
  /** Most worker threads (and so runs at once); started on demand, kept while the pool lives. */
  size?: number;
  /** How far past its limit a run may go before its thread is terminated. */
  marginMs?: number;
  limits?: Partial<LuaLimits>;
  /** Memory of all Lua states of one thread. */
  maxTotalMemoryMb?: number;
  /** Told of each run that ended in a thread: its time (ms) and how it ended (the Lua metrics). */
  observe?: (ms: number, outcome: 'ok' | 'error' | 'killed') => void;
};

export type LuaPool = LuaEngine & {
  close(): Promise<void>;
  /** Threads terminated by the hard stop since the pool started. */
  readonly terminated: number;
};

type Run = {
  spec: RunSpec;
  limits: LuaLimits;
  resolve: (o: RunOutcome) => void;
  reject: (e: Error) => void;
  /** Host calls in flight, aborted when the run ends. */
  calls: Map<number, AbortController>;
  usedMs: number;
  sliceStart: number;
  startedAt: number;
  sliceTimer?: ReturnType<typeof setTimeout>;
  wallTimer?: ReturnType<typeof setTimeout>;
};

type Slot = { worker: Worker; syncPort: MessagePort; flag: Int32Array; ready: boolean; run?: Run };

/** The pool's one mutable state, which every function below reads and changes. */
type Pool = {
  opts: LuaPoolOptions;
  limits: LuaLimits;
  size: number;
  marginMs: number;
  slots: Set<Slot>;
  queue: Run[];
  terminated: number;
  closed: boolean;
  syntax?: LuaEngine;
};

const BOOTSTRAP = new URL('./bootstrap.mjs', import.meta.url);
const CLOSED = new Error('the Lua worker pool is closed');

export const createLuaPool = (opts: LuaPoolOptions = {}): LuaPool => {
  const limits: LuaLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const p: Pool = { opts, limits, size: Math.max(1, opts.size ?? 4), marginMs: opts.marginMs ?? 500, slots: new Set(), queue: [], terminated: 0, closed: false };
  return {
    limits,
    get terminated() {
      return p.terminated;
    },
    // Compiling is bounded by the script's size (no script code runs): done in this thread.
    checkSyntax: (code) => (p.syntax ??= createLuaEngine({ limits })).checkSyntax(code),
    run: (spec) =>
      new Promise<RunOutcome>((resolve, reject) => {
        if (p.closed) return reject(CLOSED);
        p.queue.push({ spec, limits: { ...limits, ...spec.limits }, resolve, reject, calls: new Map(), usedMs: 0, sliceStart: 0, startedAt: 0 });
        pump(p);
      }),
    close: () => closePool(p),
  };
};

const post = (s: Slot, m: ToWorker, transfer?: ArrayBuffer[]): void => s.worker.postMessage(m, transfer);

/** The thread is back in Lua (run start, host call answered): the CPU deadline runs again. */
const enterLua = (p: Pool, s: Slot, r: Run): void => {
  r.sliceStart = performance.now();
  r.sliceTimer = setTimeout(() => kill(p, s, `${r.limits.timeoutMs} ms`), Math.max(0, r.limits.timeoutMs - r.usedMs) + p.marginMs);
};
const leaveLua = (r: Run): void => {
  clearTimeout(r.sliceTimer);
  r.usedMs += performance.now() - r.sliceStart;
};

/** Frees the slot of a run that ended (however it did) and hands the thread the next one. */
const finish = (p: Pool, s: Slot, r: Run): void => {
  clearTimeout(r.sliceTimer);
  clearTimeout(r.wallTimer);
  for (const c of r.calls.values()) c.abort(new Error('script finished'));
  if (s.run === r) s.run = undefined;
  pump(p);
};

/** The hard stop: terminates the thread whatever it runs; its run fails as a timeout. */
const kill = (p: Pool, s: Slot, what: string): void => {
  const r = s.run;
  p.slots.delete(s);
  p.terminated++;
  void s.worker.terminate();
  s.syncPort.close();
  if (!r) return pump(p);
  p.opts.observe?.(performance.now() - r.startedAt, 'killed');
  finish(p, s, r); // pump() starts the replacement
  r.reject(new LuaTimeoutError(`script timeout: CPU deadline exceeded (${what}); its worker thread was terminated`));
};

const onMessage = (p: Pool, s: Slot, m: FromWorker): void => {
  if (m.t === 'ready') {
    s.ready = true;
    pump(p);
    return;
  }
  const r = s.run;
  if (!r) return;
  switch (m.t) {
    case 'call':
      return relayHostCall(p, s, r, m.id, m.op, m.args);
    case 'abort':
      r.calls.get(m.id)?.abort(new Error(m.reason));
      return;
    case 'log':
      r.spec.services?.log?.(m.level, m.message, m.fields);
      return;
    case 'emit':
      return answerEmit(s, r, m.args);
    case 'done':
      leaveLua(r);
      finish(p, s, r);
      p.opts.observe?.(performance.now() - r.startedAt, 'ok');
      r.resolve({ finished: m.finished, cpuMs: m.cpuMs });
      return;
    case 'failed':
      leaveLua(r);
      finish(p, s, r);
      p.opts.observe?.(performance.now() - r.startedAt, 'error');
      r.reject(fromWire(m.error));
      return;
  }
};

/** Runs a host call here and replies, unless the run ended (or the call was aborted) meanwhile. */
const relayHostCall = (p: Pool, s: Slot, r: Run, id: number, op: HostOp, args: unknown[]): void => {
  leaveLua(r);
  const ctl = new AbortController();
  r.calls.set(id, ctl);
  hostCall(r.spec.services ?? {}, op, args, ctl.signal).then(
    ({ value, transfer }) => {
      if (s.run !== r || !r.calls.delete(id)) return;
      post(s, { t: 'reply', id, ok: true, value }, transfer);
      enterLua(p, s, r);
    },
    (e: unknown) => {
      if (s.run !== r || !r.calls.delete(id)) return;
      post(s, { t: 'reply', id, ok: false, error: e instanceof Error ? e.message : String(e) });
      enterLua(p, s, r);
    },
  );
};

/** howk.post waits in the worker (Atomics.wait) for this verdict on the sync port. */
const answerEmit = (s: Slot, r: Run, args: unknown[]): void => {
  let verdict: string | undefined;
  try {
    verdict = r.spec.emit ? r.spec.emit(args) : 'howk.post is only available to transformers';
  } catch (e) {
    verdict = e instanceof Error ? e.message : String(e);
  }
  s.syncPort.postMessage({ r: verdict });
  Atomics.store(s.flag, 0, 1);
  Atomics.notify(s.flag, 0);
};

const spawn = (p: Pool): Slot => {
  const { port1, port2 } = new MessageChannel();
  const sab = new SharedArrayBuffer(4);
  // execArgv: [] — the thread registers its own loader (bootstrap.mjs); inherited flags
  // (a test runner's, an inspector's) have no business there.
  const worker = new Worker(BOOTSTRAP, { workerData: { syncPort: port2, flag: sab, maxTotalMemoryMb: p.opts.maxTotalMemoryMb }, transferList: [port2], execArgv: [] });
  const s: Slot = { worker, syncPort: port1, flag: new Int32Array(sab), ready: false };
  worker.unref();
  worker.on('message', (m: FromWorker) => onMessage(p, s, m));
  worker.on('error', (e) => threadGone(p, s, `failed: ${e.message}`));
  worker.on('exit', (code) => threadGone(p, s, `exited (${code})`));
  p.slots.add(s);
  return s;
};

/** A thread that failed or exited on its own (a terminated one has left p.slots already). */
const threadGone = (p: Pool, s: Slot, why: string): void => {
  if (!p.slots.has(s)) return;
  p.slots.delete(s);
  const r = s.run;
  if (r) {
    finish(p, s, r);
    r.reject(new Error(`Lua worker thread ${why}`));
  } else if (!s.ready) {
    // A thread that cannot start would be respawned for ever: the waiting runs fail instead.
    for (const q of p.queue.splice(0)) q.reject(new Error(`Lua worker thread ${why}`));
  }
  pump(p);
};

const start = (p: Pool, s: Slot, r: Run): void => {
  s.run = r;
  r.startedAt = performance.now();
  r.wallTimer = setTimeout(() => kill(p, s, `wall-clock limit of ${r.limits.wallTimeoutMs} ms`), r.limits.wallTimeoutMs + p.marginMs);
  try {
    post(s, runMessage(r));
  } catch (e) {
    // An input that cannot be cloned: this run fails, the thread stays free.
    finish(p, s, r);
    r.reject(e instanceof Error ? e : new Error(String(e)));
    return;
  }
  enterLua(p, s, r);
};

/** What the worker is told of a run: its services only as flags, since they stay in this thread. */
const runMessage = (r: Run): ToWorker => {
  const sv = r.spec.services ?? {};
  return {
    t: 'run',
    code: r.spec.code,
    mode: r.spec.mode,
    input: r.spec.input,
    limits: r.limits,
    kvScope: sv.kvScope,
    http: sv.http,
    has: { kv: !!sv.kv, fetch: !!sv.fetch, credential: !!sv.decryptCredential, log: !!sv.log, emit: !!r.spec.emit },
  };
};

const pump = (p: Pool): void => {
  if (p.closed) return;
  for (;;) {
    const idle = p.queue.length ? [...p.slots].find((s) => s.ready && !s.run) : undefined;
    if (!idle) break;
    start(p, idle, p.queue.shift()!);
  }
  // Threads without a run (idle or starting) cover the queue plus one spare: a thread takes
  // a while to start, and the next run (or the one after a termination) should not wait for it.
  let free = [...p.slots].filter((s) => !s.run).length;
  while (free < p.queue.length + 1 && p.slots.size < p.size) {
    spawn(p);
    free++;
  }
};

const closePool = async (p: Pool): Promise<void> => {
  p.closed = true;
  for (const q of p.queue.splice(0)) q.reject(CLOSED);
  const all = [...p.slots];
  p.slots.clear();
  for (const s of all) {
    if (s.run) {
      const r = s.run;
      finish(p, s, r);
      r.reject(CLOSED);
    }
    s.syncPort.close();
  }
  await Promise.all(all.map((s) => s.worker.terminate()));
};
