import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { createLuaEngine, DEFAULT_LIMITS, LuaTimeoutError, type LuaEngine, type LuaLimits } from '../../../core/lua';
import type { RunOutcome, RunSpec } from '../../../core/lua/engine';
import { readCapped } from '../../../core/lua/http';
import { fromWire, type FetchReply, type FromWorker, type HostOp, type ToWorker } from './protocol';

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

const BOOTSTRAP = new URL('./bootstrap.mjs', import.meta.url);
const CLOSED = new Error('the Lua worker pool is closed');

export const createLuaPool = (opts: LuaPoolOptions = {}): LuaPool => {
  const limits: LuaLimits = { ...DEFAULT_LIMITS, ...opts.limits };
  const size = Math.max(1, opts.size ?? 4);
  const marginMs = opts.marginMs ?? 500;
  const slots = new Set<Slot>();
  const queue: Run[] = [];
  let terminated = 0;
  let closed = false;
  let syntax: LuaEngine | undefined;

  const post = (s: Slot, m: ToWorker, transfer?: ArrayBuffer[]) => s.worker.postMessage(m, transfer);

  /** The thread is back in Lua (run start, host call answered): the CPU deadline runs again. */
  const enterLua = (s: Slot, r: Run) => {
    r.sliceStart = performance.now();
    r.sliceTimer = setTimeout(() => kill(s, `${r.limits.timeoutMs} ms`), Math.max(0, r.limits.timeoutMs - r.usedMs) + marginMs);
  };
  const leaveLua = (r: Run) => {
    clearTimeout(r.sliceTimer);
    r.usedMs += performance.now() - r.sliceStart;
  };

  const finish = (s: Slot, r: Run) => {
    clearTimeout(r.sliceTimer);
    clearTimeout(r.wallTimer);
    for (const c of r.calls.values()) c.abort(new Error('script finished'));
    if (s.run === r) s.run = undefined;
    pump();
  };

  const kill = (s: Slot, what: string) => {
    const r = s.run;
    slots.delete(s);
    terminated++;
    void s.worker.terminate();
    s.syncPort.close();
    if (!r) return pump();
    opts.observe?.(performance.now() - r.startedAt, 'killed');
    finish(s, r); // pump() starts the replacement
    r.reject(new LuaTimeoutError(`script timeout: CPU deadline exceeded (${what}); its worker thread was terminated`));
  };

  const hostCall = async (r: Run, op: HostOp, args: unknown[], signal: AbortSignal): Promise<{ value: unknown; transfer?: ArrayBuffer[] }> => {
    const sv = r.spec.services ?? {};
    switch (op) {
      case 'kv.get':
        return { value: await sv.kv!.get(args[0] as string) };
      case 'kv.set':
        return { value: await sv.kv!.set(args[0] as string, args[1] as string, args[2] as number | undefined) };
      case 'kv.del':
        return { value: await sv.kv!.del(args[0] as string) };
      case 'credential':
        return { value: await sv.decryptCredential!(args[0] as string) };
      case 'fetch': {
        const init = args[1] as { method: string; headers: Record<string, string>; body?: string };
        const res = await sv.fetch!(args[0] as string, { ...init, redirect: 'manual', signal });
        const headers: [string, string][] = [];
        res.headers.forEach((v, k) => headers.push([k, v]));
        // The body is read here, capped like the http module does, so a huge answer stays out of both threads.
        const cap = sv.http?.maxResponseBytes ?? 1024 * 1024;
        let body: Uint8Array | null = null;
        if (res.status >= 300 && res.status < 400 && res.headers.has('location')) await res.body?.cancel();
        else body = await readCapped(res, cap);
        const value: FetchReply = { status: res.status, statusText: res.statusText, headers, body };
        return { value, transfer: body ? [body.buffer as ArrayBuffer] : undefined };
      }
    }
  };

  const onMessage = (s: Slot, m: FromWorker) => {
    if (m.t === 'ready') {
      s.ready = true;
      pump();
      return;
    }
    const r = s.run;
    if (!r) return;
    switch (m.t) {
      case 'call': {
        leaveLua(r);
        const ctl = new AbortController();
        r.calls.set(m.id, ctl);
        hostCall(r, m.op, m.args, ctl.signal).then(
          ({ value, transfer }) => {
            if (s.run !== r || !r.calls.delete(m.id)) return;
            post(s, { t: 'reply', id: m.id, ok: true, value }, transfer);
            enterLua(s, r);
          },
          (e: unknown) => {
            if (s.run !== r || !r.calls.delete(m.id)) return;
            post(s, { t: 'reply', id: m.id, ok: false, error: e instanceof Error ? e.message : String(e) });
            enterLua(s, r);
          },
        );
        return;
      }
      case 'abort':
        r.calls.get(m.id)?.abort(new Error(m.reason));
        return;
      case 'log':
        r.spec.services?.log?.(m.level, m.message, m.fields);
        return;
      case 'emit': {
        let verdict: string | undefined;
        try {
          verdict = r.spec.emit ? r.spec.emit(m.args) : 'howk.post is only available to transformers';
        } catch (e) {
          verdict = e instanceof Error ? e.message : String(e);
        }
        s.syncPort.postMessage({ r: verdict });
        Atomics.store(s.flag, 0, 1);
        Atomics.notify(s.flag, 0);
        return;
      }
      case 'done':
        leaveLua(r);
        finish(s, r);
        opts.observe?.(performance.now() - r.startedAt, 'ok');
        r.resolve({ finished: m.finished, cpuMs: m.cpuMs });
        return;
      case 'failed':
        leaveLua(r);
        finish(s, r);
        opts.observe?.(performance.now() - r.startedAt, 'error');
        r.reject(fromWire(m.error));
        return;
    }
  };

  const spawn = (): Slot => {
    const { port1, port2 } = new MessageChannel();
    const sab = new SharedArrayBuffer(4);
    // execArgv: [] — the thread registers its own loader (bootstrap.mjs); inherited flags
    // (a test runner's, an inspector's) have no business there.
    const worker = new Worker(BOOTSTRAP, { workerData: { syncPort: port2, flag: sab, maxTotalMemoryMb: opts.maxTotalMemoryMb }, transferList: [port2], execArgv: [] });
    const s: Slot = { worker, syncPort: port1, flag: new Int32Array(sab), ready: false };
    worker.unref();
    worker.on('message', (m: FromWorker) => onMessage(s, m));
    const gone = (why: string) => {
      if (!slots.has(s)) return;
      slots.delete(s);
      const r = s.run;
      if (r) {
        finish(s, r);
        r.reject(new Error(`Lua worker thread ${why}`));
      } else if (!s.ready) {
        // A thread that cannot start would be respawned for ever: the waiting runs fail instead.
        for (const q of queue.splice(0)) q.reject(new Error(`Lua worker thread ${why}`));
      }
      pump();
    };
    worker.on('error', (e) => gone(`failed: ${e.message}`));
    worker.on('exit', (code) => gone(`exited (${code})`));
    slots.add(s);
    return s;
  };

  const start = (s: Slot, r: Run) => {
    s.run = r;
    r.startedAt = performance.now();
    const sv = r.spec.services ?? {};
    r.wallTimer = setTimeout(() => kill(s, `wall-clock limit of ${r.limits.wallTimeoutMs} ms`), r.limits.wallTimeoutMs + marginMs);
    const run: ToWorker = {
      t: 'run',
      code: r.spec.code,
      mode: r.spec.mode,
      input: r.spec.input,
      limits: r.limits,
      kvScope: sv.kvScope,
      http: sv.http,
      has: { kv: !!sv.kv, fetch: !!sv.fetch, credential: !!sv.decryptCredential, log: !!sv.log, emit: !!r.spec.emit },
    };
    try {
      post(s, run);
    } catch (e) {
      // An input that cannot be cloned: this run fails, the thread stays free.
      finish(s, r);
      r.reject(e instanceof Error ? e : new Error(String(e)));
      return;
    }
    enterLua(s, r);
  };

  const pump = () => {
    if (closed) return;
    for (;;) {
      const idle = queue.length ? [...slots].find((s) => s.ready && !s.run) : undefined;
      if (!idle) break;
      start(idle, queue.shift()!);
    }
    // Threads without a run (idle or starting) cover the queue plus one spare: a thread takes
    // a while to start, and the next run (or the one after a termination) should not wait for it.
    let free = [...slots].filter((s) => !s.run).length;
    while (free < queue.length + 1 && slots.size < size) {
      spawn();
      free++;
    }
  };

  return {
    limits,
    get terminated() {
      return terminated;
    },
    // Compiling is bounded by the script's size (no script code runs): done in this thread.
    checkSyntax: (code) => (syntax ??= createLuaEngine({ limits })).checkSyntax(code),
    run: (spec) =>
      new Promise<RunOutcome>((resolve, reject) => {
        if (closed) return reject(CLOSED);
        queue.push({ spec, limits: { ...limits, ...spec.limits }, resolve, reject, calls: new Map(), usedMs: 0, sliceStart: 0, startedAt: 0 });
        pump();
      }),
    async close() {
      closed = true;
      for (const q of queue.splice(0)) q.reject(CLOSED);
      const all = [...slots];
      slots.clear();
      for (const s of all) {
        if (s.run) {
          const r = s.run;
          finish(s, r);
          r.reject(CLOSED);
        }
        s.syncPort.close();
      }
      await Promise.all(all.map((s) => s.worker.terminate()));
    },
  };
};
