// Enqueue→delivery latency, stage by stage: howk-api, howk-worker and howk-scheduler as
// processes on real Kafka + Redis, one loopback receiver. It first measures the highest
// single-enqueue rate (unpaced, short), then offers paced load at fractions of it, one
// webhook per request and batches of 10, to 50 endpoints and to one endpoint. Each phase
// reports the client's figures (the start of the enqueue request → the receiver's receipt)
// and Howk's own stage histograms (GET /metrics of the api and the worker, scraped before
// and after the phase: the difference is the phase), and the same load against the
// zero-work forwarder (busy-forwarder.ts), the ceiling of this machine. docs/BENCHMARKS.md.
//
//   npm run bench:latency     (starts Kafka + Redis unless given)
//   KAFKA_BROKERS=127.0.0.1:19092 REDIS_URL=redis://127.0.0.1:16379 npx tsx test/bench/latency.bench.ts
//
// Knobs (env): BENCH_LAT_PHASE_S (12) paced seconds per phase, BENCH_LAT_MAX_S (5) the
// unpaced measurement, BENCH_LAT_LOADS (25,50,90) % of the highest rate, BENCH_LAT_MODES
// (single,batch), BENCH_LAT_VARIANTS (many,one), BENCH_LAT_TARGETS (howk,ceiling),
// BENCH_LAT_CONFIGS (50), BENCH_LAT_CONCURRENCY (64) requests in flight, BENCH_LAT_RATE (0:
// measure) the 100 % rate, BENCH_LAT_WARMUP (500), BENCH_LAT_DRAIN_S (30), BENCH_LAT_REDIS_DB (56).
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { loadConfig } from '../../core/config/load';
import { runKeys } from '../../workers/cli/keys';
import { createRedis } from '../../workers/redis/client';
import {
  apiReady,
  cpuWindow,
  envInt,
  envNum,
  fmt,
  freePort,
  gitRevision,
  log,
  pidListening,
  serviceEnv,
  setLogTag,
  sleep,
  startProcess,
  stopProcess,
  uptime,
  waitBounded,
  waitUntil,
  type Svc,
} from './busy-harness';
import { arrivedCount, enqueueAll, latencies, startReceiver, type LoadShape, type Route } from './busy-load';
import { kafkaAdmin } from './busy-probe';
import { latencyLine, phaseStages, scrapeAll, stageCount, stageTable, summary, type MetricsSource, type PhaseResult } from './latency-report';

setLogTag('latency');
const list = (name: string, def: string) =>
  (process.env[name] ?? def)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const PHASE_S = envNum('BENCH_LAT_PHASE_S', 12);
const MAX_S = envNum('BENCH_LAT_MAX_S', 5);
const LOADS = list('BENCH_LAT_LOADS', '25,50,90').map(Number);
const MODES = list('BENCH_LAT_MODES', 'single,batch');
const VARIANTS = list('BENCH_LAT_VARIANTS', 'many,one');
const TARGETS = list('BENCH_LAT_TARGETS', 'howk,ceiling');
const CONFIGS = Math.max(1, envInt('BENCH_LAT_CONFIGS', 50));
const CONCURRENCY = Math.max(1, envInt('BENCH_LAT_CONCURRENCY', 64));
const RATE = envInt('BENCH_LAT_RATE', 0);
const WARMUP = envInt('BENCH_LAT_WARMUP', 500);
const DRAIN_MS = envInt('BENCH_LAT_DRAIN_S', 30) * 1000;
const REDIS_DB = envInt('BENCH_LAT_REDIS_DB', 56);
const PAYLOAD = envInt('BENCH_LAT_PAYLOAD_BYTES', 256);
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const SHAPES: Record<string, LoadShape> = {
  single: { batch: 1, single: true, concurrency: CONCURRENCY, payloadBytes: PAYLOAD },
  batch: { batch: 10, concurrency: Math.max(4, Math.ceil(CONCURRENCY / 4)), payloadBytes: PAYLOAD },
};
for (const m of MODES) if (!SHAPES[m]) throw new Error(`BENCH_LAT_MODES: unknown mode ${m} (single, batch)`);

const brokers = process.env.KAFKA_BROKERS;
const redisBase = process.env.REDIS_URL;
if (!brokers || !redisBase) {
  console.error('KAFKA_BROKERS and REDIS_URL must be set: run `npm run bench:latency` (starts Kafka + Redis) or export them.');
  process.exit(2);
}
for (const b of brokers.split(',')) if (!/^(127\.0\.0\.1|localhost):\d+$/.test(b.trim())) throw new Error(`the benchmark only talks to 127.0.0.1; KAFKA_BROKERS has ${b}`);
const redisUrl = (() => {
  const u = new URL(redisBase);
  if (!['127.0.0.1', 'localhost'].includes(u.hostname)) throw new Error(`the benchmark only talks to 127.0.0.1; REDIS_URL is ${redisBase}`);
  u.pathname = `/${REDIS_DB}`;
  return u.toString();
})();

const runId = `lat-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
const topics = Object.fromEntries(Object.keys(loadConfig({ env: {} }).kafka.topics).map((k) => [k, `${runId}.${k}`]));
const logDir = join(tmpdir(), runId);
mkdirSync(logDir, { recursive: true });
const knobs = Object.entries(process.env)
  .filter(([k]) => k.startsWith('BENCH_LAT_'))
  .map(([k, v]) => `${k}=${v}`);
const command = `${[...knobs, `KAFKA_BROKERS=${brokers}`, `REDIS_URL=${redisBase}`].join(' ')} npx tsx test/bench/latency.bench.ts`;

const main = async (): Promise<number> => {
  console.log(`Enqueue→delivery latency, stage by stage (${runId}, ${new Date().toISOString()}, commit ${gitRevision()})`);
  console.log(`  command: ${command}`);
  console.log(
    `  ${CONFIGS} config ids; phases of ${PHASE_S} s at ${LOADS.join(', ')} % of the highest single-enqueue rate (measured over ${MAX_S} s${RATE ? `; given: ${RATE}/s` : ''}); ${MODES.join(' and ')}; ${VARIANTS.map((v) => (v === 'one' ? 'one endpoint' : `${CONFIGS} endpoints`)).join(' and ')}; ${CONCURRENCY} requests in flight (batches: ${SHAPES.batch!.concurrency})`,
  );
  console.log(`  before the run: ${uptime()}`);
  log(`service logs in ${logDir}`);
  const redis = createRedis(redisUrl);
  await redis.flushdb();
  await redis.quit();

  const rx = await startReceiver();
  const apiPort = await freePort();
  const api = `http://127.0.0.1:${apiPort}`;
  const env = serviceEnv({ apiPort, brokers, runId, redisUrl, topics, secret: SECRET });
  const conns = loadConfig({ env: { ...process.env, ...env } as Record<string, string> }).delivery.max_conns_per_host;

  const svcs: Svc[] = [];
  const agent = new Agent({ connections: CONCURRENCY + 8, keepAliveTimeout: 60_000, pipelining: 1, headersTimeout: 30_000, bodyTimeout: 30_000 });
  const admin = await kafkaAdmin(brokers, `${runId}-admin`);
  let code = 1;
  try {
    const keyOut: string[] = [];
    if ((await runKeys(loadConfig({ env }), ['create', '--scopes', 'enqueue,read', '--name', 'latency-bench'], { out: (l) => keyOut.push(l), err: () => {} })) !== 0)
      throw new Error('could not create an API key');
    const apiKey = (JSON.parse(keyOut.join('')) as { key: string }).key;
    const apiSvc = startProcess('api', 'workers/api/main.ts', env, logDir);
    svcs.push(apiSvc);
    await waitUntil('howk-api /ready', 90_000, () => apiReady(api, agent), svcs);
    const workerMetrics = await freePort();
    const schedMetrics = await freePort();
    const worker = startProcess('worker', 'workers/worker/main.ts', { ...env, HOWK_METRICS_PORT: String(workerMetrics) }, logDir);
    const sched = startProcess('scheduler', 'workers/scheduler/main.ts', { ...env, HOWK_METRICS_PORT: String(schedMetrics) }, logDir);
    const fwd = startProcess('forwarder', 'test/bench/busy-forwarder.ts', { FORWARD_PORT: String(await freePort()), FORWARD_CONNS: String(conns) }, logDir);
    svcs.push(worker, sched, fwd);
    for (const s of [worker, sched]) await waitUntil(`howk-${s.name} to start`, 90_000, () => s.lines.some((l) => l.includes(`"howk-${s.name} started"`)), svcs);
    await waitUntil('the forwarder', 30_000, () => fwd.lines.some((l) => l.startsWith('forwarder listening')), svcs);
    const fwdUrl = `http://127.0.0.1:${/listening (\d+)/.exec(fwd.lines.find((l) => l.startsWith('forwarder listening'))!)![1]}`;
    console.log(`  api: ${apiSvc.command}  (GET ${api}/metrics, read scope)`);
    console.log(`  worker: HOWK_METRICS_PORT=${workerMetrics} ${worker.command}`);
    console.log(`  scheduler: HOWK_METRICS_PORT=${schedMetrics} ${sched.command}`);
    console.log(`  forwarder: FORWARD_CONNS=${conns} ${fwd.command}`);
    const sources: MetricsSource[] = [{ url: `${api}/metrics`, apiKey }, { url: `http://127.0.0.1:${workerMetrics}/metrics` }, { url: `http://127.0.0.1:${schedMetrics}/metrics` }];
    const procs = [
      { name: 'howk-api', pid: apiSvc.child.pid },
      { name: 'howk-worker', pid: worker.child.pid },
      { name: 'howk-scheduler', pid: sched.child.pid },
      { name: 'kafka broker', pid: pidListening(Number(brokers.split(',')[0]!.split(':')[1])) },
      { name: 'redis-server', pid: pidListening(Number(new URL(redisBase).port || 6379)) },
      { name: 'forwarder', pid: fwd.child.pid },
    ];
    const routeOf =
      (variant: string) =>
      (c: number): Route => {
        const cfg = c % CONFIGS;
        return { config: `lat-${cfg}`, endpoint: variant === 'one' ? `${rx.fast}/one` : `${rx.fast}/ep/${cfg}`, cls: 'main' };
      };

    for (const [name, base] of [
      ['howk', api],
      ['ceiling', fwdUrl],
    ] as const) {
      if (!WARMUP) break;
      const w = await enqueueAll(base, agent, apiKey, WARMUP, SHAPES.batch!, routeOf('many'), 0, performance.now() + 60_000);
      await waitUntil(`${name} warm-up`, 90_000, () => arrivedCount(rx.arrivals, w.ids) >= w.ids.size, svcs);
      log(`${name} warm-up: ${w.ids.size} delivered`);
      rx.reset();
    }

    /** One phase against one target: the client's figures, and for Howk the stages of the phase. */
    const runPhase = async (target: string, title: string, shape: LoadShape, route: (c: number) => Route, count: number, rate: number, seconds: number) => {
      rx.reset();
      const loadavg = uptime();
      console.log(`\n== ${title} — ${target}  (${loadavg})`);
      const howk = target === 'howk';
      const before = howk ? await scrapeAll(sources, agent) : undefined;
      const cpu = cpuWindow(procs);
      const t0 = performance.now();
      const enq = await enqueueAll(howk ? api : fwdUrl, agent, apiKey, count, shape, route, rate, t0 + seconds * 1000);
      const done = await waitBounded(DRAIN_MS, () => arrivedCount(rx.arrivals, enq.ids) >= enq.ids.size);
      const delivered = arrivedCount(rx.arrivals, enq.ids);
      let after = before;
      // The last stages (outcomes durable, offsets committed) end after the receipt: wait for them (10 s at most).
      for (const end = performance.now() + 10_000; before; await sleep(100)) {
        after = await scrapeAll(sources, agent);
        if ((stageCount(before, after, 'durable') >= delivered && stageCount(before, after, 'committed') >= delivered) || performance.now() > end) break;
      }
      const cpuLines = cpu.stop(delivered);
      const lat = latencies(rx.arrivals, enq.ids, () => true);
      const sent = (enq.tEnd - t0) / 1000;
      console.log(
        `  accepted ${fmt(enq.accepted)} in ${sent.toFixed(1)} s (${fmt(enq.accepted / sent)}/s; ${enq.failures} requests failed, ${enq.retries} retried); delivered ${fmt(delivered)}${done ? '' : ` (not all within ${DRAIN_MS / 1000} s)`}; duplicates ${rx.duplicates()}`,
      );
      console.log(`  enqueue→receipt (client): ${latencyLine(lat)}`);
      const stages = before && after ? phaseStages(before, after) : undefined;
      if (stages) console.log(stageTable(stages).join('\n'));
      console.log('  CPU:');
      console.log(cpuLines.join('\n'));
      return { enq, lat, stages, loadavg, sent };
    };

    let maxRate = RATE;
    if (!maxRate) {
      const r = await runPhase('howk', `highest single-enqueue rate (unpaced, ${MAX_S} s, ${CONFIGS} endpoints)`, SHAPES.single!, routeOf('many'), 10_000_000, 0, MAX_S);
      maxRate = Math.max(10, Math.floor(r.enq.accepted / r.sent));
    }
    console.log(`\n100 % = ${fmt(maxRate)} webhooks/s (${RATE ? 'BENCH_LAT_RATE' : 'measured'})`);

    const results: PhaseResult[] = [];
    for (const variant of VARIANTS) {
      for (const mode of MODES) {
        for (const pct of LOADS) {
          const rate = Math.max(1, Math.round((maxRate * pct) / 100));
          const shape = SHAPES[mode]!;
          const count = Math.max(shape.batch, Math.round(rate * PHASE_S));
          const label = variant === 'one' ? 'one endpoint' : `${CONFIGS} endpoints`;
          const res: PhaseResult = { variant: label, mode: mode === 'single' ? 'single' : 'batch of 10', load: `${pct} %`, rate, loadavg: '' };
          for (const target of TARGETS) {
            // Requests stop being started after the paced time plus a margin; a phase never runs away.
            const r = await runPhase(target, `${label}, ${res.mode}, ${pct} % (${fmt(rate)}/s)`, shape, routeOf(variant), count, rate, PHASE_S + 5);
            if (target === 'howk') Object.assign(res, { howk: r.lat, stages: r.stages, loadavg: /load averages?:\s*([\d.]+)/.exec(r.loadavg)?.[1] ?? '?' });
            else res.ceiling = r.lat;
          }
          results.push(res);
        }
      }
    }
    console.log(`\n${summary(results)}`);
    console.log(
      '\nenqueue→receipt: the start of the enqueue request → the receiver has the request head (client clock). Stages: docs/OPERATIONS.md, Metrics; "max ≤" is the bucket bound under which every observation fell.',
    );
    console.log(`after the run: ${uptime()}`);
    code = 0;
  } catch (e) {
    log(`error: ${(e as Error).stack ?? String(e)}`);
    for (const s of svcs) log(`--- last lines of ${s.name} (${s.logFile}):\n${s.lines.slice(-15).join('\n')}`);
  } finally {
    for (const s of [...svcs].reverse()) await stopProcess(s);
    await agent.close().catch(() => {});
    await rx.close();
    if (process.env.BENCH_KEEP_TOPICS !== '1')
      await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch((e) => log(`could not delete the run's topics: ${String(e)}`));
    await admin.disconnect().catch(() => {});
    const r = createRedis(redisUrl);
    await r.flushdb().catch(() => {});
    await r.quit().catch(() => {});
  }
  return code;
};

setTimeout(() => {
  log('hard deadline (30 min) passed; exiting');
  process.exit(1);
}, 1_800_000).unref();
process.exit(await main());
