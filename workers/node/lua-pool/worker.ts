import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import { createLuaEngine, type LuaServices } from '../../../core/lua';
import { toWire, type FetchReply, type FromWorker, type HostOp, type ToWorker } from './protocol';

// A Lua worker thread: runs one script at a time with core's engine. The host services are
// proxies: every kv, http and credential call is a message to the main thread, which owns
// the Redis connection, the guarded fetch and the credential keys. The pool terminates this
// thread if a run outlives its limits, whatever the script does.

const { syncPort, flag: sab, maxTotalMemoryMb } = workerData as { syncPort: MessagePort; flag: SharedArrayBuffer; maxTotalMemoryMb?: number };
const flag = new Int32Array(sab);
const port = parentPort!;
const engine = createLuaEngine({ maxTotalMemoryMb });
const post = (m: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer);

let nextCall = 0;
const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
const call = (op: HostOp, args: unknown[], signal?: AbortSignal): Promise<unknown> =>
  new Promise((resolve, reject) => {
    const id = ++nextCall;
    pending.set(id, { resolve, reject });
    post({ t: 'call', id, op, args });
    signal?.addEventListener('abort', () => post({ t: 'abort', id, reason: signal.reason instanceof Error ? signal.reason.message : 'aborted' }), { once: true });
  });

/** howk.post answers synchronously: block until the main thread has judged the webhook. */
const emit = (args: unknown[]): string | undefined => {
  Atomics.store(flag, 0, 0);
  post({ t: 'emit', args });
  Atomics.wait(flag, 0, 0);
  return (receiveMessageOnPort(syncPort)?.message as { r?: string } | undefined)?.r;
};

const NULL_BODY = new Set([101, 204, 205, 304]);
const WARM_UP = "local t = {} for i = 1, 3000 do t[i] = string.rep('x', 1000) .. i end t = nil collectgarbage() for i = 1, 200 do json.decode(json.encode(request.payload)) end";

const run = async (m: Extract<ToWorker, { t: 'run' }>): Promise<void> => {
  const services: LuaServices = { kvScope: m.kvScope, http: m.http };
  if (m.has.kv) {
    services.kv = {
      get: (k) => call('kv.get', [k]) as Promise<string | null>,
      set: (k, v, ttl) => call('kv.set', [k, v, ttl]) as Promise<void>,
      del: (k) => call('kv.del', [k]) as Promise<void>,
    };
  }
  if (m.has.fetch) {
    services.fetch = async (url, init) => {
      const r = (await call('fetch', [url, { method: init.method, headers: init.headers, body: init.body }], init.signal)) as FetchReply;
      return new Response(NULL_BODY.has(r.status) || !r.body ? null : (r.body as Uint8Array<ArrayBuffer>), { status: r.status, statusText: r.statusText, headers: r.headers });
    };
  }
  if (m.has.credential) services.decryptCredential = (name) => call('credential', [name]) as Promise<string | null>;
  if (m.has.log) services.log = (level, message, fields) => post({ t: 'log', level, message, fields });
  try {
    const out = await engine.run({ code: m.code, mode: m.mode, input: m.input, services, limits: m.limits, emit: m.has.emit ? emit : undefined });
    post({ t: 'done', finished: out.finished, cpuMs: out.cpuMs });
  } catch (e) {
    post({ t: 'failed', error: toWire(e) });
  } finally {
    // Replies still on their way belong to a finished run.
    pending.clear();
  }
};

port.on('message', (m: ToWorker) => {
  if (m.t === 'run') void run(m);
  else {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.ok) p.resolve(m.value);
    else p.reject(new Error(m.error));
  }
});

// Before the pool hands this thread a run: the WASM module and the prelude are compiled, and
// one run that allocates a few MB grows the WASM memory and gets the VM's hot paths compiled,
// so that a thread's first script is not measured against its deadline at cold speed.
await engine.checkSyntax('');
await engine
  .run({ code: WARM_UP, mode: 'delivery', input: { request: { body: '{"a":[1,2,3]}', headers: {} } }, limits: { timeoutMs: 10_000, memoryLimitMb: 16 } })
  .catch(() => undefined);
post({ t: 'ready' });
