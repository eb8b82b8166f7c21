// End-to-end throughput benchmark: howk-api → Kafka → howk-worker → a local receiver, on
// real Kafka + Redis, with the services as child processes (as in production).
//
//   npm run bench                                    # starts Kafka + Redis unless given
//   KAFKA_BROKERS=127.0.0.1:19092 REDIS_URL=redis://127.0.0.1:16379 npx tsx test/bench/e2e.bench.ts
//
// Knobs (env; docs/BENCHMARKS.md has the table):
//   BENCH_N (20000)          webhooks in the measured run
//   BENCH_MODE (batch)       batch: POST /webhooks/:config/enqueue/batch; single: one per request
//   BENCH_BATCH (100)        webhooks per batch request (max 100)
//   BENCH_CONCURRENCY        requests in flight (4 in batch mode, 64 in single mode)
//   BENCH_CONFIGS (50)       config ids the requests rotate over
//   BENCH_ORIGINS (1)        receiver ports; config i posts to origin i % ORIGINS
//   BENCH_RATE (0)           webhooks/s offered; 0 = as fast as the api takes them
//   BENCH_PAYLOAD_BYTES      approximate payload size (256)
//   BENCH_WARMUP (5000)      webhooks delivered before timing starts (V8 compiles hot code meanwhile)
//   BENCH_PREFILL=1          enqueue everything with the worker stopped, then time its drain
//   BENCH_TIMEOUT_S (180)    the run fails when not everything is delivered by then
//   BENCH_REDIS_DB (9)       Redis database of the run (flushed at start)
//   BENCH_PROF=api,worker    --cpu-prof into .tmp/bench-prof/<run>/<service>/ (main thread:
//                            CPU.*.<pid>.0.*.cpuprofile; summarise with cpuprofile-top.ts)
//   BENCH_KEEP_TOPICS=1      keep the run's topics (deleted by default)
//   BENCH_TARGET (3000)      the delivered/s figure the summary compares with
// Any HOWK_* variable in the environment reaches the services (e.g. HOWK_KAFKA_PARTITIONS),
// except the names the bench makes unique per run (topics, group, api port, Redis URL).
//
// Exits 1 when not every accepted webhook was delivered within BENCH_TIMEOUT_S, or when
// a sampled signature does not verify. Only 127.0.0.1 is used.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { loadConfig } from '../../core/config/load';
import { runKeys } from '../../workers/cli/keys';
import { createRedis } from '../../workers/redis/client';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';
import { apiReady, deleteRunTopics, serviceEnv, allProcesses, CLK_TCK, cpuTicksOf, freePort, percentile, pidListening, systemTicks } from './busy-harness';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

// ------------------------------------------------------------------ settings ----
const envInt = (name: string, def: number): number => {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(v)}`);
  return Math.floor(n);
};

const MODE = (process.env.BENCH_MODE ?? 'batch') as 'batch' | 'single';
if (MODE !== 'batch' && MODE !== 'single') throw new Error('BENCH_MODE must be batch or single');
const N = envInt('BENCH_N', 20_000);
const BATCH = MODE === 'single' ? 1 : Math.min(100, Math.max(1, envInt('BENCH_BATCH', 100)));
const CONCURRENCY = Math.max(1, envInt('BENCH_CONCURRENCY', MODE === 'single' ? 64 : 4));
const CONFIGS = Math.max(1, envInt('BENCH_CONFIGS', 50));
const ORIGINS = Math.max(1, envInt('BENCH_ORIGINS', 1));
const RATE = envInt('BENCH_RATE', 0);
const PAYLOAD_BYTES = envInt('BENCH_PAYLOAD_BYTES', 256);
const WARMUP = envInt('BENCH_WARMUP', 5000);
const TIMEOUT_MS = envInt('BENCH_TIMEOUT_S', 180) * 1000;
const REDIS_DB = envInt('BENCH_REDIS_DB', 9);
const TARGET = envInt('BENCH_TARGET', 3000);
// Prefill: enqueue everything with the worker stopped, then start it and time the drain
// (separates the api's capacity from the worker's; latency is then meaningless).
const PREFILL = process.env.BENCH_PREFILL === '1';
const PROF = new Set(
  (process.env.BENCH_PROF ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean),
);
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SAMPLE_EVERY = 100; // verify the signature of every 100th delivery

const brokers = process.env.KAFKA_BROKERS;
const redisBase = process.env.REDIS_URL;
if (!brokers || !redisBase) {
  console.error('KAFKA_BROKERS and REDIS_URL must be set: run `npm run bench` (starts Kafka + Redis) or export them.');
  process.exit(2);
}
for (const b of brokers.split(',')) {
  if (!/^(127\.0\.0\.1|localhost):\d+$/.test(b.trim())) throw new Error(`the benchmark only talks to 127.0.0.1; KAFKA_BROKERS has ${b}`);
}
const redisUrl = (() => {
  const u = new URL(redisBase);
  if (!['127.0.0.1', 'localhost'].includes(u.hostname)) throw new Error(`the benchmark only talks to 127.0.0.1; REDIS_URL is ${redisBase}`);
  u.pathname = `/${REDIS_DB}`;
  return u.toString();
})();

const runId = `bench-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
// Every topic of the schema gets a name of its own for this run (runs never collide).
const topics = Object.fromEntries(Object.keys(loadConfig({ env: {} }).kafka.topics).map((k) => [k, `${runId}.${k}`]));
const logDir = join(tmpdir(), runId);
const profDir = join(root, '.tmp', 'bench-prof', runId);
mkdirSync(logDir, { recursive: true });

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

// ------------------------------------------------------------------ CPU accounting ----
const cores = availableParallelism();

// ------------------------------------------------------------------ receiver ----
/** One node:http server listening on ORIGINS ports of 127.0.0.1 (one origin each). */
type Receiver = { urls: string[]; server: Server };
const arrivals = new Map<string, number>(); // webhook-id → performance.now() of its first delivery
let duplicates = 0;
let receivedTotal = 0;
let warmArrivals = 0;
let badSignatures = 0;
let sampled = 0;
let receiving = true;
const extraListeners: import('node:net').Server[] = [];

const startReceiver = async (): Promise<Receiver> => {
  let requests = 0;
  const server = createServer((req: IncomingMessage, res) => {
    const at = performance.now();
    requests++;
    const id = String(req.headers['webhook-id']);
    const warm = req.url?.startsWith('/warm') ?? false;
    if (!receiving) {
      res.writeHead(503).end();
      req.resume();
      return;
    }
    const verify = !warm && requests % SAMPLE_EVERY === 0;
    const chunks: Buffer[] = [];
    if (verify) req.on('data', (c: Buffer) => chunks.push(c));
    else req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok');
      if (verify) {
        sampled++;
        if (!verifyStandardWebhook(SECRET, req.headers, Buffer.concat(chunks))) badSignatures++;
      }
    });
    if (warm) {
      warmArrivals++;
      return;
    }
    receivedTotal++;
    if (arrivals.has(id)) duplicates++;
    else arrivals.set(id, at);
  });
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const urls = [`http://127.0.0.1:${(server.address() as AddressInfo).port}`];
  // More origins: the same server also accepts connections from extra listeners.
  for (let i = 1; i < ORIGINS; i++) {
    const extra = createNetServer((socket) => server.emit('connection', socket));
    await new Promise<void>((r) => extra.listen(0, '127.0.0.1', r));
    extraListeners.push(extra);
    urls.push(`http://127.0.0.1:${(extra.address() as AddressInfo).port}`);
  }
  return { urls, server };
};

// ------------------------------------------------------------------ services ----
type Svc = { name: string; child: ChildProcess; logFile: string; exited: Promise<number | null>; lines: string[] };

const startService = (name: 'api' | 'worker' | 'scheduler', env: Record<string, string>, logName: string = name): Svc => {
  const args = ['--import', 'tsx'];
  if (PROF.has(name)) {
    // One directory per service: tsx's loader thread writes a profile of its own (tid != 0).
    mkdirSync(join(profDir, name), { recursive: true });
    args.push('--cpu-prof', `--cpu-prof-dir=${join(profDir, name)}`);
  }
  args.push(`workers/${name}/main.ts`);
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logFile = join(logDir, `${logName}.log`);
  const out = createWriteStream(logFile);
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    out.write(chunk);
    for (const l of chunk.toString('utf8').split('\n')) {
      if (!l) continue;
      lines.push(l);
      if (lines.length > 200) lines.shift();
    }
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { name, child, logFile, exited, lines };
};

const waitUntil = async (what: string, timeoutMs: number, fn: () => boolean | Promise<boolean>, svcs: Svc[] = []): Promise<void> => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    for (const s of svcs) {
      if (s.child.exitCode !== null) throw new Error(`${s.name} exited (code ${s.child.exitCode}) while waiting for ${what}:\n${s.lines.slice(-20).join('\n')}`);
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
};

const stopService = async (s: Svc): Promise<void> => {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return;
  s.child.kill('SIGTERM');
  const done = await Promise.race([s.exited.then(() => true), sleep(20_000).then(() => false)]);
  if (!done) {
    log(`${s.name} did not stop within 20 s; killing pid ${s.child.pid}`);
    s.child.kill('SIGKILL');
    await s.exited;
  }
};

// ------------------------------------------------------------------ load ----
const pad = 'x'.repeat(Math.max(0, PAYLOAD_BYTES - 120));
const payloadOf = (seq: number) => `{"type":"bench.event","seq":${seq},"data":{"user":"u_${seq % 9973}","amount":${seq % 100_000},"currency":"EUR","note":"${pad}"}}`;

type EnqueueStats = { accepted: number; requests: number; retries: number; failures: number; ids: Map<string, number> };

/**
 * Posts `count` webhooks (`pathPrefix` on the receiver) in chunks of BATCH, CONCURRENCY
 * requests in flight, optionally paced at RATE webhooks/s. Records, per accepted id, the
 * start time of the request that carried it.
 */
const enqueueAll = async (
  api: string,
  agent: Agent,
  apiKey: string,
  count: number,
  receiverUrls: string[],
  pathPrefix: string,
  configPrefix: string,
  rate: number,
): Promise<EnqueueStats> => {
  const st: EnqueueStats = { accepted: 0, requests: 0, retries: 0, failures: 0, ids: new Map() };
  const chunks = Math.ceil(count / BATCH);
  let next = 0;
  const t0 = performance.now();
  let fatal = false;
  const lane = async () => {
    for (;;) {
      if (fatal) return;
      const c = next++;
      if (c >= chunks) return;
      const from = c * BATCH;
      const to = Math.min(count, from + BATCH);
      if (rate > 0) {
        const due = t0 + (from / rate) * 1000;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
      }
      const cfg = c % CONFIGS;
      const config = `${configPrefix}-${cfg}`;
      const endpoint = `${receiverUrls[cfg % receiverUrls.length]}${pathPrefix}/${config}`;
      const items = [];
      for (let i = from; i < to; i++) items.push(`{"endpoint":${JSON.stringify(endpoint)},"payload":${payloadOf(i)}}`);
      const body = MODE === 'single' ? items[0]! : `{"webhooks":[${items.join(',')}]}`;
      const path = MODE === 'single' ? `/webhooks/${config}/enqueue` : `/webhooks/${config}/enqueue/batch`;
      for (let attempt = 0; ; attempt++) {
        const start = performance.now();
        st.requests++;
        let status = 0;
        let text = '';
        try {
          const res = await request(`${api}${path}`, {
            method: 'POST',
            body,
            headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
            dispatcher: agent,
          });
          status = res.statusCode;
          text = await res.body.text();
        } catch (e) {
          text = String(e);
        }
        if (status === 202) {
          const json = JSON.parse(text) as { webhook_id?: string; results?: { webhook_id: string; status: string }[] };
          const ids = MODE === 'single' ? [json.webhook_id!] : json.results!.map((r) => r.webhook_id);
          for (const id of ids) st.ids.set(id, start);
          st.accepted += ids.length;
          break;
        }
        // 4xx (but 429) will not get better: stop the run instead of retrying it.
        const permanent = status >= 400 && status < 500 && status !== 429;
        if (permanent || attempt >= 4) {
          st.failures++;
          if (permanent) fatal = true;
          log(`enqueue of chunk ${c} failed for good: ${status} ${text.slice(0, 200)}`);
          break;
        }
        st.retries++;
        if (st.retries <= 5) log(`enqueue answered ${status || 'error'} (${text.slice(0, 160)}); retrying`);
        await sleep(100 * 2 ** attempt);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, chunks) }, lane));
  return st;
};

/** The commit the services ran from, and whether the tree had local changes. */
const gitRevision = (): string => {
  try {
    const rev = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return `commit ${rev}${dirty ? ' + local changes' : ''}`;
  } catch {
    return 'commit unknown';
  }
};

// ------------------------------------------------------------------ main ----
const main = async (): Promise<number> => {
  log(`run ${runId}: N=${N} mode=${MODE} batch=${BATCH} concurrency=${CONCURRENCY} configs=${CONFIGS} origins=${ORIGINS} rate=${RATE || 'max'} payload≈${payloadOf(0).length} B`);
  log(`service logs in ${logDir}`);

  // Other work on the machine skews every figure: say how busy it was just before.
  const idle0 = systemTicks();
  await sleep(1000);
  const idle1 = systemTicks();
  const busyBefore = ((idle1.busy - idle0.busy) / Math.max(1, idle1.total - idle0.total)) * 100;
  log(`machine busy before the run: ${busyBefore.toFixed(0)}% of all cores`);

  const redis = createRedis(redisUrl);
  await redis.flushdb();
  await redis.quit();

  const receiver = await startReceiver();
  const apiPort = await freePort();
  const api = `http://127.0.0.1:${apiPort}`;
  const env = serviceEnv({ apiPort, brokers, runId, redisUrl, topics, secret: SECRET });

  const svcs: Svc[] = [];
  const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 60_000, pipelining: 1 });
  let code = 1;
  try {
    // An API key with the enqueue scope, written to this run's keys topic before the api
    // starts (the api replays that topic at start-up).
    const keyOut: string[] = [];
    const keyCode = await runKeys(loadConfig({ env }), ['create', '--scopes', 'enqueue,read', '--name', 'bench'], { out: (l) => keyOut.push(l), err: () => {} });
    if (keyCode !== 0) throw new Error(`could not create an API key (exit ${keyCode})`);
    const apiKey = (JSON.parse(keyOut.join('')) as { key: string }).key;

    // The api creates the topics; the others start once it is ready (no create race).
    const apiSvc = startService('api', env);
    svcs.push(apiSvc);
    await waitUntil('howk-api /ready', 90_000, () => apiReady(api, agent), svcs);
    let workerSvc = startService('worker', env);
    const schedSvc = startService('scheduler', env);
    svcs.push(workerSvc, schedSvc);
    // Each binary logs "howk-<role> started" once its loops run (consumer subscribed).
    const started = (s: Svc) => () => s.lines.some((l) => l.includes(`"howk-${s.name} started"`));
    await waitUntil('howk-worker to start', 90_000, started(workerSvc), svcs);
    await waitUntil('howk-scheduler to start', 90_000, started(schedSvc), svcs);

    // Warm-up: the consumer group has joined and every code path is compiled before timing.
    let warmAccepted = 0;
    if (WARMUP > 0) {
      const t = performance.now();
      const w = await enqueueAll(api, agent, apiKey, WARMUP, receiver.urls, '/warm', 'warm', 0);
      warmAccepted = w.accepted;
      await waitUntil(`${w.accepted} warm-up deliveries`, 90_000, () => warmArrivals >= w.accepted, svcs);
      log(`warm-up: ${w.accepted} webhooks delivered in ${fmt(performance.now() - t)} ms`);
    }

    // ---- measured run
    if (PREFILL) {
      await stopService(workerSvc);
      svcs.splice(svcs.indexOf(workerSvc), 1);
    }
    const kafkaPid = pidListening(Number(brokers.split(',')[0]!.split(':')[1]));
    const redisPid = pidListening(Number(new URL(redisBase).port || 6379));
    type CpuRow = { name: string; pid: number | undefined; ticks0?: number; t0: number };
    const cpuRow = (name: string, pid: number | undefined): CpuRow => ({ name, pid, ticks0: pid ? cpuTicksOf(pid) : undefined, t0: performance.now() });
    const cpuRowsAt: CpuRow[] = [
      cpuRow('howk-api', apiSvc.child.pid),
      cpuRow('howk-worker', workerSvc.child.pid),
      cpuRow('howk-scheduler', schedSvc.child.pid),
      cpuRow('kafka broker', kafkaPid),
      cpuRow('redis-server', redisPid),
    ];
    const self0 = process.cpuUsage();
    const sys0 = systemTicks();
    const all0 = allProcesses();

    const tStart = performance.now();
    let enqueueDone = false;
    const progress = setInterval(() => {
      const s = (performance.now() - tStart) / 1000;
      log(`${s.toFixed(1)} s: ${enqueueDone ? 'enqueue done, ' : ''}delivered ${arrivals.size}/${N} (${fmt(arrivals.size / s)}/s)`);
    }, 2000);
    const enq = await enqueueAll(api, agent, apiKey, N, receiver.urls, '/bench', 'cfg', RATE);
    const tEnqEnd = performance.now();
    enqueueDone = true;
    let tWorker = tStart;
    if (PREFILL) {
      log(`prefill: ${fmt(enq.accepted)} webhooks enqueued; starting howk-worker`);
      workerSvc = startService('worker', env, 'worker-2');
      svcs.push(workerSvc);
      await waitUntil('howk-worker to start', 90_000, started(workerSvc), svcs);
      tWorker = performance.now();
      cpuRowsAt[1] = cpuRow('howk-worker', workerSvc.child.pid);
    }
    const expected = enq.ids;
    const deliveredAll = () => {
      if (arrivals.size < expected.size) return false;
      for (const id of expected.keys()) if (!arrivals.has(id)) return false;
      return true;
    };
    let timedOut = false;
    try {
      await waitUntil(
        `every accepted webhook to be delivered (BENCH_TIMEOUT_S=${TIMEOUT_MS / 1000} counts from the first enqueue)`,
        Math.max(0, TIMEOUT_MS - (tEnqEnd - tStart)),
        deliveredAll,
        svcs,
      );
    } catch (e) {
      timedOut = true;
      log(String((e as Error).message));
    }
    clearInterval(progress);
    // The measured window closes once howk has recorded every outcome (its /stats count them),
    // not at the last arrival: writing outcomes is part of the work, and a worker that
    // delayed it would otherwise look cheaper than it is.
    const tLast = performance.now();
    const statsDelivered = async (): Promise<number> => {
      const r = await request(`${api}/stats`, { headers: { authorization: `Bearer ${apiKey}` }, dispatcher: agent });
      const j = (await r.body.json()) as { last_1h?: { delivered?: number } };
      return j.last_1h?.delivered ?? 0;
    };
    let outcomesMs: number | undefined;
    if (!timedOut) {
      for (const until = tLast + 30_000; performance.now() < until; await sleep(50)) {
        if ((await statsDelivered().catch(() => 0)) >= warmAccepted + expected.size) {
          outcomesMs = performance.now() - tLast;
          break;
        }
      }
    }
    const tEnd = performance.now();
    const cpu1 = cpuRowsAt.map((r) => (r.pid ? cpuTicksOf(r.pid) : undefined));
    const self1 = process.cpuUsage(self0);
    const sys1 = systemTicks();
    const all1 = allProcesses();
    await sleep(500); // late duplicates
    // The platform's own counters (Redis db flushed at start: this run plus the warm-up).
    let stats = 'n/a';
    try {
      const r = await request(`${api}/stats`, { headers: { authorization: `Bearer ${apiKey}` }, dispatcher: agent });
      const j = (await r.body.json()) as { last_1h?: Record<string, number> };
      if (r.statusCode === 200 && j.last_1h)
        stats = Object.entries(j.last_1h)
          .map(([k, v]) => `${k} ${fmt(v)}`)
          .join(', ');
    } catch {
      /* informational only */
    }

    // ---- figures
    const lat: number[] = [];
    let lastArrival = tStart;
    let firstArrival = Infinity;
    for (const [id, start] of expected) {
      const at = arrivals.get(id);
      if (at === undefined) continue;
      lat.push(at - start);
      if (at > lastArrival) lastArrival = at;
      if (at < firstArrival) firstArrival = at;
    }
    lat.sort((a, b) => a - b);
    // Webhooks of one batch request share a config id, so the worker delivers them one after
    // the other (per-config order): the gaps between their arrivals are its per-webhook step.
    const byRequest = new Map<number, number[]>();
    for (const [id, start] of expected) {
      const at = arrivals.get(id);
      if (at === undefined) continue;
      const g = byRequest.get(start);
      if (g) g.push(at);
      else byRequest.set(start, [at]);
    }
    const gaps: number[] = [];
    for (const g of byRequest.values()) {
      g.sort((a, b) => a - b);
      for (let i = 1; i < g.length; i++) gaps.push(g[i]! - g[i - 1]!);
    }
    gaps.sort((a, b) => a - b);
    const delivered = lat.length;
    const wallS = (tEnd - tStart) / 1000;
    const enqS = (tEnqEnd - tStart) / 1000;
    // Prefill: the drain, from the worker's first delivery to its last.
    const delS = (PREFILL ? lastArrival - Math.min(firstArrival, lastArrival) : lastArrival - tStart) / 1000 || NaN;
    const strangers = [...arrivals.keys()].filter((id) => !expected.has(id)).length;

    const rows: [string, string][] = [
      [
        'mode',
        `${PREFILL ? 'PREFILL (worker started after the enqueue), ' : ''}${MODE}${MODE === 'batch' ? ` (${BATCH}/request)` : ''}, ${CONCURRENCY} requests in flight, ${CONFIGS} config ids, ${ORIGINS} receiver origin${ORIGINS > 1 ? 's' : ''}, rate ${RATE ? `${fmt(RATE)}/s` : 'unpaced'}`,
      ],
      ['webhooks accepted (202)', `${fmt(enq.accepted)} of ${fmt(N)} in ${fmt(enq.requests)} requests (${enq.retries} retried, ${enq.failures} failed)`],
      ['enqueue throughput', `${fmt(enq.accepted / enqS)} webhooks/s (${enqS.toFixed(2)} s)`],
      ['delivered (first, unique)', `${fmt(delivered)} of ${fmt(expected.size)}${strangers ? ` (+${strangers} unknown ids)` : ''}`],
      PREFILL
        ? [
            'delivery throughput',
            `${fmt(delivered / delS)} webhooks/s (drain: first → last delivery ${delS.toFixed(2)} s; first delivery ${fmt(firstArrival - tWorker)} ms after the worker started)`,
          ]
        : ['delivery throughput', `${fmt(delivered / delS)} webhooks/s (first enqueue → last delivery ${delS.toFixed(2)} s)`],
      PREFILL
        ? ['latency enqueue→receipt', 'n/a in prefill mode (every webhook waits for the worker to start)']
        : [
            'latency enqueue→receipt',
            `p50 ${fmt(percentile(lat, 50))} ms   p90 ${fmt(percentile(lat, 90))} ms   p99 ${fmt(percentile(lat, 99))} ms   max ${fmt(lat[lat.length - 1] ?? NaN)} ms`,
          ],
      MODE === 'batch' && BATCH > 1
        ? [
            'per-config step',
            `p50 ${fmt(percentile(gaps, 50), 2)} ms   p90 ${fmt(percentile(gaps, 90), 2)} ms   (gap between consecutive deliveries of one batch request: one config, delivered in order)`,
          ]
        : ['per-config step', 'n/a (single mode)'],
      ['duplicate deliveries', `${duplicates} (${fmt(receivedTotal)} requests received)`],
      ['signatures verified', `${sampled - badSignatures}/${sampled} sampled OK`],
      ['howk /stats (incl. warm-up)', stats],
      ['outcomes recorded', outcomesMs === undefined ? 'not all within 30 s of the last delivery' : `${fmt(outcomesMs)} ms after the last delivery (the CPU window ends here)`],
    ];
    const perK = (cpuS: number) => fmt((cpuS * 1e6) / Math.max(1, delivered));
    const cpuRows: [string, string][] = cpuRowsAt.map((r, i) => {
      const a = r.ticks0;
      const b = cpu1[i];
      if (a === undefined || b === undefined) return [r.name, 'n/a'];
      const s = (b - a) / CLK_TCK;
      const windowS = (tEnd - r.t0) / 1000;
      const since = r.t0 > tStart + 1 ? `, over its last ${windowS.toFixed(1)} s` : '';
      return [r.name, `${s.toFixed(1)} s  (${fmt((s / windowS) * 100)}% of one core${since}, ${perK(s)} ms per 1,000 webhooks)`];
    });
    const selfS = (self1.user + self1.system) / 1e6;
    cpuRows.push(['bench (load + receiver)', `${selfS.toFixed(1)} s  (${fmt((selfS / wallS) * 100)}% of one core, ${perK(selfS)} ms per 1,000 webhooks)`]);
    const sysBusy = ((sys1.busy - sys0.busy) / Math.max(1, sys1.total - sys0.total)) * 100;
    const ours = cpuRows.reduce((a, [, v]) => a + (Number.parseFloat(v) || 0), 0);
    const otherS = Math.max(0, (sys1.busy - sys0.busy) / CLK_TCK - ours);
    // Name the biggest neighbours (processes that are not part of the run).
    const mine = new Set<number>([process.pid, ...svcs.map((x) => x.child.pid ?? -1), ...cpuRowsAt.map((r) => r.pid ?? -1)]);
    const others = [...all1]
      .filter(([pid]) => !mine.has(pid))
      .map(([pid, p]) => ({ name: p.name, s: (p.ticks - (all0.get(pid)?.ticks ?? 0)) / CLK_TCK }))
      .filter((x) => x.s >= 0.2)
      .sort((a, b) => b.s - a.s)
      .slice(0, 3);
    // Contention-proof yardstick: the run's own CPU per webhook, and the rate it would allow
    // if the run had every core to itself (linear scaling assumed; an estimate, not a measurement).
    const oursPerK = (ours * 1e6) / Math.max(1, delivered);
    cpuRows.push([
      'run total',
      `${fmt(oursPerK)} ms CPU per 1,000 webhooks → at most ~${fmt((cores * 1e6) / Math.max(1, oursPerK), 0)} webhooks/s on ${cores} dedicated cores (estimate)`,
    ]);
    cpuRows.push(['other processes', `${otherS.toFixed(1)} s  (${fmt((otherS / wallS) * 100)}% of one core; ${fmt(busyBefore)}% of the machine was busy before the run)`]);
    if (others.length) cpuRows.push(['  of which', others.map((o) => `${o.name} ${o.s.toFixed(1)} s`).join('; ')]);
    cpuRows.push(['whole machine', `${fmt(sysBusy)}% busy over the run (all ${cores} cores)`]);

    const w = Math.max(...[...rows, ...cpuRows].map(([k]) => k.length));
    const line = (k: string, v: string) => `  ${k.padEnd(w)}  ${v}`;
    console.log(`\nHowk end-to-end benchmark  (${runId}, ${new Date().toISOString()}, ${gitRevision()})`);
    console.log(rows.map(([k, v]) => line(k, v)).join('\n'));
    console.log(`  CPU over the measured ${wallS.toFixed(1)} s:`);
    console.log(cpuRows.map(([k, v]) => line(`  ${k}`, v)).join('\n'));
    const rate = delivered / delS;
    console.log(`  target ${fmt(TARGET)}/s delivered: ${rate >= TARGET ? 'MET' : 'NOT MET'}`);
    console.log('');

    const allDelivered = !timedOut && enq.failures === 0 && delivered === N;
    if (!allDelivered) log(`FAIL: ${delivered} of ${N} delivered within ${TIMEOUT_MS / 1000} s (${enq.failures} enqueue requests failed)`);
    if (badSignatures) log(`FAIL: ${badSignatures} sampled signatures did not verify`);
    code = allDelivered && !badSignatures ? 0 : 1;
  } catch (e) {
    log(`error: ${(e as Error).stack ?? String(e)}`);
    for (const s of svcs) log(`--- last lines of ${s.name} (${s.logFile}):\n${s.lines.slice(-15).join('\n')}`);
    code = 1;
  } finally {
    receiving = false;
    for (const s of [...svcs].reverse()) await stopService(s);
    if (PROF.size) log(`CPU profiles in ${profDir}`);
    await agent.close().catch(() => {});
    receiver.server.closeAllConnections();
    for (const l of extraListeners) l.close();
    await new Promise<void>((r) => receiver.server.close(() => r()));
    if (process.env.BENCH_KEEP_TOPICS !== '1') {
      await deleteRunTopics(brokers, runId, topics);
    }
  }
  return code;
};

const timer = setTimeout(() => {
  log('hard deadline passed; exiting');
  process.exit(1);
}, TIMEOUT_MS + 180_000);
timer.unref();
process.exit(await main());
