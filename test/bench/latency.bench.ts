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
import { Agent } from 'undici';
import { loadConfig } from '../../core/config/load';
import { envInt, envNum, loopbackInfra, runNames } from './bench-env';
import { createApiKey, endRun, flushDb, hardDeadline, logFailure, startStack } from './bench-run';
import { cpuWindow, fmt, freePort, gitRevision, log, serviceEnv, setLogTag, sleep, uptime, waitBounded, type Svc } from './busy-harness';
import { arrivedCount, enqueueAll, latencies, startReceiver, warmUp, type LoadShape, type Route } from './busy-load';
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

const infra = loopbackInfra(REDIS_DB, 'run `npm run bench:latency` (starts Kafka + Redis) or export them.');
const { brokers, redisBase, redisUrl } = infra;
const { runId, topics, logDir } = runNames('lat');
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
  await flushDb(redisUrl);

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
    const apiKey = await createApiKey(env, 'enqueue,read', 'latency-bench');
    const stack = await startStack({ infra, env, api, agent, logDir, conns, svcs, metrics: true });
    const { api: apiSvc, worker, scheduler: sched, forwarder: fwd, forwarderUrl: fwdUrl, procs } = stack;
    const { worker: workerMetrics, scheduler: schedMetrics } = stack.metrics!;
    console.log(`  api: ${apiSvc.command}  (GET ${api}/metrics, read scope)`);
    console.log(`  worker: HOWK_METRICS_PORT=${workerMetrics} ${worker.command}`);
    console.log(`  scheduler: HOWK_METRICS_PORT=${schedMetrics} ${sched.command}`);
    console.log(`  forwarder: FORWARD_CONNS=${conns} ${fwd.command}`);
    const sources: MetricsSource[] = [{ url: `${api}/metrics`, apiKey }, { url: `http://127.0.0.1:${workerMetrics}/metrics` }, { url: `http://127.0.0.1:${schedMetrics}/metrics` }];
    const routeOf =
      (variant: string) =>
      (c: number): Route => {
        const cfg = c % CONFIGS;
        return { config: `lat-${cfg}`, endpoint: variant === 'one' ? `${rx.fast}/one` : `${rx.fast}/ep/${cfg}`, cls: 'main' };
      };

    if (WARMUP)
      await warmUp(
        { agent, apiKey, shape: SHAPES.batch!, route: routeOf('many'), rx, svcs },
        [
          ['howk', api],
          ['ceiling', fwdUrl],
        ],
        WARMUP,
      );

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
    logFailure(e, svcs);
  } finally {
    await admin.disconnect().catch(() => {});
    await endRun({ svcs, agent, closeReceiver: rx.close, brokers, runId, topics, keepTopics: process.env.BENCH_KEEP_TOPICS === '1', flushRedisUrl: redisUrl });
  }
  return code;
};

hardDeadline(1_800_000, '30 min');
process.exit(await main());
