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
//   HOWK_REDIS_CLUSTER_NODES a Redis Cluster instead of REDIS_URL's Redis (not flushed; every
//                            node's CPU counted, as every broker's of KAFKA_BROKERS)
// Any HOWK_* variable in the environment reaches the services (e.g. HOWK_KAFKA_PARTITIONS),
// except the names the bench makes unique per run (topics, group, api port, Redis URL).
//
// Exits 1 when not every accepted webhook was delivered within BENCH_TIMEOUT_S, or when
// a sampled signature does not verify. Only 127.0.0.1 is used.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { envInt, infraProcesses, loopbackInfra, runNames } from './bench-env';
import { createApiKey, endRun, flushDb, hardDeadline, hasStarted, logFailure } from './bench-run';
import { apiReady, fmt, freePort, log, root, serviceEnv, setLogTag, sleep, startProcess, stopProcess, systemTicks, waitUntil, type Svc } from './busy-harness';
import { enqueueAll, payloadOf, type EnqueueResult, type LoadShape, type Route } from './busy-load';
import { startE2eCpu } from './e2e-cpu';
import { startE2eReceiver, type E2eReceiver } from './e2e-receiver';
import { printE2eReport, type E2eSettings } from './e2e-report';

// ------------------------------------------------------------------ settings ----
setLogTag('bench');
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
const SHAPE: LoadShape = { batch: BATCH, concurrency: CONCURRENCY, payloadBytes: PAYLOAD_BYTES, single: MODE === 'single' };
const SETTINGS: E2eSettings = { mode: MODE, batch: BATCH, concurrency: CONCURRENCY, configs: CONFIGS, origins: ORIGINS, rate: RATE, n: N, prefill: PREFILL, target: TARGET };

const infra = loopbackInfra(REDIS_DB, 'run `npm run bench` (starts Kafka + Redis) or export them.');
// A Redis Cluster (test/bench/scaled.bench.ts starts one for the run): the services use it, and
// every node's CPU is counted; there is no database to flush (the cluster is the run's own).
const CLUSTER_NODES = (process.env.HOWK_REDIS_CLUSTER_NODES ?? '').split(',').filter(Boolean);
const { brokers, redisUrl } = infra;
const { runId, topics, logDir } = runNames('bench');
const profDir = join(root, '.tmp', 'bench-prof', runId);

// ------------------------------------------------------------------ services ----
const startService = (name: 'api' | 'worker' | 'scheduler', env: Record<string, string>, logName: string = name): Svc => {
  const nodeArgs: string[] = [];
  if (PROF.has(name)) {
    // One directory per service: tsx's loader thread writes a profile of its own (tid != 0).
    mkdirSync(join(profDir, name), { recursive: true });
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${join(profDir, name)}`);
  }
  return startProcess(name, `workers/${name}/main.ts`, env, logDir, { nodeArgs, logName });
};

/**
 * Posts `count` webhooks to `pathPrefix` on the receiver, config ids `configPrefix`-0… in
 * turn (config i posts to origin i % ORIGINS), unpaced or at `rate` webhooks/s.
 */
const enqueue = (api: string, agent: Agent, apiKey: string, count: number, rx: E2eReceiver, pathPrefix: string, configPrefix: string, rate: number): Promise<EnqueueResult> =>
  enqueueAll(
    api,
    agent,
    apiKey,
    count,
    SHAPE,
    (c): Route => {
      const cfg = c % CONFIGS;
      return { config: `${configPrefix}-${cfg}`, endpoint: `${rx.urls[cfg % rx.urls.length]}${pathPrefix}/${configPrefix}-${cfg}`, cls: 'main' };
    },
    rate,
    Infinity,
  );

/** Howk's own counters of the last hour (`/stats`), or undefined. */
const lastHour = async (api: string, apiKey: string, agent: Agent): Promise<Record<string, number> | undefined> => {
  const r = await request(`${api}/stats`, { headers: { authorization: `Bearer ${apiKey}` }, dispatcher: agent });
  const j = (await r.body.json()) as { last_1h?: Record<string, number> };
  return r.statusCode === 200 ? j.last_1h : undefined;
};

/** How busy the machine was over the last second (other work skews every figure). */
const busyNow = async (): Promise<number> => {
  const idle0 = systemTicks();
  await sleep(1000);
  const idle1 = systemTicks();
  return ((idle1.busy - idle0.busy) / Math.max(1, idle1.total - idle0.total)) * 100;
};

type Ctx = { api: string; agent: Agent; apiKey: string; env: Record<string, string>; rx: E2eReceiver; svcs: Svc[] };

/** The api first (it creates the topics), then the worker and the scheduler once it is ready (no create race). */
const startServices = async (c: Ctx): Promise<{ api: Svc; worker: Svc; scheduler: Svc }> => {
  const api = startService('api', c.env);
  c.svcs.push(api);
  await waitUntil('howk-api /ready', 90_000, () => apiReady(c.api, c.agent), c.svcs);
  const worker = startService('worker', c.env);
  const scheduler = startService('scheduler', c.env);
  c.svcs.push(worker, scheduler);
  await waitUntil('howk-worker to start', 90_000, hasStarted(worker), c.svcs);
  await waitUntil('howk-scheduler to start', 90_000, hasStarted(scheduler), c.svcs);
  return { api, worker, scheduler };
};

/** Warm-up: the consumer group has joined and every code path is compiled before timing. Returns the webhooks accepted. */
const warmUp = async (c: Ctx): Promise<number> => {
  if (WARMUP <= 0) return 0;
  const t = performance.now();
  const w = await enqueue(c.api, c.agent, c.apiKey, WARMUP, c.rx, '/warm', 'warm', 0);
  await waitUntil(`${w.accepted} warm-up deliveries`, 90_000, () => c.rx.counts().warm >= w.accepted, c.svcs);
  log(`warm-up: ${w.accepted} webhooks delivered in ${fmt(performance.now() - t)} ms`);
  return w.accepted;
};

/** Waits until every accepted webhook has arrived; false when BENCH_TIMEOUT_S passed first. */
const awaitDeliveries = async (c: Ctx, expected: Map<string, unknown>, waitedMs: number): Promise<boolean> => {
  const deliveredAll = () => {
    if (c.rx.arrivals.size < expected.size) return false;
    for (const id of expected.keys()) if (!c.rx.arrivals.has(id)) return false;
    return true;
  };
  try {
    await waitUntil(
      `every accepted webhook to be delivered (BENCH_TIMEOUT_S=${TIMEOUT_MS / 1000} counts from the first enqueue)`,
      Math.max(0, TIMEOUT_MS - waitedMs),
      deliveredAll,
      c.svcs,
    );
    return true;
  } catch (e) {
    log(String((e as Error).message));
    return false;
  }
};

/**
 * The measured window closes once howk has recorded every outcome (its /stats count them),
 * not at the last arrival: writing outcomes is part of the work, and a worker that delayed it
 * would otherwise look cheaper than it is. Returns the ms after the last arrival, or undefined.
 */
const awaitOutcomes = async (c: Ctx, total: number): Promise<number | undefined> => {
  const tLast = performance.now();
  for (const until = tLast + 30_000; performance.now() < until; await sleep(50)) {
    const delivered = await lastHour(c.api, c.apiKey, c.agent).then(
      (h) => h?.delivered ?? 0,
      () => 0,
    );
    if (delivered >= total) return performance.now() - tLast;
  }
  return undefined;
};

/** The platform's own counters (Redis db flushed at start: this run plus the warm-up). */
const statsLine = async (c: Ctx): Promise<string> => {
  try {
    const h = await lastHour(c.api, c.apiKey, c.agent);
    if (h)
      return Object.entries(h)
        .map(([k, v]) => `${k} ${fmt(v)}`)
        .join(', ');
  } catch {
    /* informational only */
  }
  return 'n/a';
};

/** The measured run and its report; returns the exit code. */
const measure = async (c: Ctx, services: { api: Svc; worker: Svc; scheduler: Svc }, warmAccepted: number, busyBefore: number): Promise<number> => {
  let worker = services.worker;
  if (PREFILL) {
    await stopProcess(worker);
    c.svcs.splice(c.svcs.indexOf(worker), 1);
  }
  const cpu = startE2eCpu([
    { name: 'howk-api', pid: services.api.child.pid },
    { name: 'howk-worker', pid: worker.child.pid },
    { name: 'howk-scheduler', pid: services.scheduler.child.pid },
    ...infraProcesses(infra, CLUSTER_NODES),
  ]);
  const tStart = performance.now();
  let enqueueDone = false;
  const progress = setInterval(() => {
    const s = (performance.now() - tStart) / 1000;
    log(`${s.toFixed(1)} s: ${enqueueDone ? 'enqueue done, ' : ''}delivered ${c.rx.arrivals.size}/${N} (${fmt(c.rx.arrivals.size / s)}/s)`);
  }, 2000);
  const enq = await enqueue(c.api, c.agent, c.apiKey, N, c.rx, '/bench', 'cfg', RATE);
  const tEnqEnd = performance.now();
  enqueueDone = true;
  let tWorker = tStart;
  if (PREFILL) {
    log(`prefill: ${fmt(enq.accepted)} webhooks enqueued; starting howk-worker`);
    worker = startService('worker', c.env, 'worker-2');
    c.svcs.push(worker);
    await waitUntil('howk-worker to start', 90_000, hasStarted(worker), c.svcs);
    tWorker = performance.now();
    cpu.restart('howk-worker', worker.child.pid);
  }
  const timedOut = !(await awaitDeliveries(c, enq.ids, tEnqEnd - tStart));
  clearInterval(progress);
  const outcomesMs = timedOut ? undefined : await awaitOutcomes(c, warmAccepted + enq.ids.size);
  const tEnd = performance.now();
  const cpuRows = cpu.stop();
  await sleep(500); // late duplicates
  const stats = await statsLine(c);
  const mine = c.svcs.map((x) => x.child.pid ?? -1);
  const delivered = printE2eReport(SETTINGS, { runId, enq, rx: c.rx, tStart, tEnqEnd, tWorker, tEnd, stats, outcomesMs }, (d) =>
    cpuRows({ tStart, tEnd, delivered: d, busyBefore, mine }),
  );
  const { badSignatures } = c.rx.counts();
  const allDelivered = !timedOut && enq.failures === 0 && delivered === N;
  if (!allDelivered) log(`FAIL: ${delivered} of ${N} delivered within ${TIMEOUT_MS / 1000} s (${enq.failures} enqueue requests failed)`);
  if (badSignatures) log(`FAIL: ${badSignatures} sampled signatures did not verify`);
  return allDelivered && !badSignatures ? 0 : 1;
};

// ------------------------------------------------------------------ main ----
const main = async (): Promise<number> => {
  log(
    `run ${runId}: N=${N} mode=${MODE} batch=${BATCH} concurrency=${CONCURRENCY} configs=${CONFIGS} origins=${ORIGINS} rate=${RATE || 'max'} payload≈${payloadOf('x'.repeat(Math.max(0, PAYLOAD_BYTES - 120)), 0).length} B`,
  );
  log(`service logs in ${logDir}`);
  const busyBefore = await busyNow();
  log(`machine busy before the run: ${busyBefore.toFixed(0)}% of all cores`);
  if (!CLUSTER_NODES.length) await flushDb(redisUrl);

  const rx = await startE2eReceiver(SECRET, ORIGINS);
  const apiPort = await freePort();
  const env = serviceEnv({ apiPort, brokers, runId, redisUrl, topics, secret: SECRET });
  const c: Ctx = { api: `http://127.0.0.1:${apiPort}`, agent: new Agent({ connections: CONCURRENCY, keepAliveTimeout: 60_000, pipelining: 1 }), apiKey: '', env, rx, svcs: [] };
  try {
    c.apiKey = await createApiKey(env, 'enqueue,read', 'bench');
    const services = await startServices(c);
    const warmAccepted = await warmUp(c);
    return await measure(c, services, warmAccepted, busyBefore);
  } catch (e) {
    logFailure(e, c.svcs);
    return 1;
  } finally {
    rx.refuse();
    await endRun({ svcs: c.svcs, agent: c.agent, closeReceiver: rx.close, brokers, runId, topics, keepTopics: process.env.BENCH_KEEP_TOPICS === '1' });
    if (PROF.size) log(`CPU profiles in ${profDir}`);
  }
};

hardDeadline(TIMEOUT_MS + 180_000);
process.exit(await main());
