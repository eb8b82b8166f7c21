// Busy endpoint, many endpoints, slow and sick neighbours: howk-api, howk-worker and
// howk-scheduler as processes on real Kafka + Redis, each workload measured twice with the
// same load generator and receiver: against Howk, and against a zero-work forwarder
// (busy-forwarder.ts: answers 202 and forwards each webhook at once) whose figures are the
// ceiling of this machine. docs/BENCHMARKS.md has the knobs and what each figure means.
//
//   npm run bench:busy      (starts Kafka + Redis unless given; `npm run bench` runs it after e2e)
//   KAFKA_BROKERS=127.0.0.1:19092 REDIS_URL=redis://127.0.0.1:16379 npx tsx test/bench/busy.bench.ts
//   HOWK_BENCH_SCALE=0.1 ... for a quick run (2,000 webhooks instead of 20,000)
import { Agent } from 'undici';
import { loadConfig } from '../../core/config/load';
import { envInt, envNum, loopbackInfra, runNames } from './bench-env';
import { createApiKey, endRun, flushDb, hardDeadline, logFailure, startStack } from './bench-run';
import { serviceEnv, cpuWindow, freePort, gitRevision, log, uptime, waitBounded, type Svc } from './busy-harness';
import { arrivedCount, enqueueAll, lastArrival, startReceiver, warmUp, type EnqueueResult, type LoadShape, type Route } from './busy-load';
import { endOffsets, endpointHashOf, kafkaAdmin, sampleEndpoint, statsLine, type Sample } from './busy-probe';
import { report, type Phase } from './busy-report';

const SCALE = envNum('HOWK_BENCH_SCALE', 1);
const scaled = (name: string, full: number) => Math.max(100, envInt(name, Math.round(full * SCALE)));
const N = { a: scaled('BENCH_BUSY_N_A', 20_000), b: scaled('BENCH_BUSY_N_B', 20_000), c: scaled('BENCH_BUSY_N_C', 10_000), d: scaled('BENCH_BUSY_N_D', 20_000) };
const CONFIGS = Math.max(2, envInt('BENCH_BUSY_CONFIGS', 50));
const UNPACED: LoadShape = {
  batch: Math.min(100, Math.max(1, envInt('BENCH_BUSY_BATCH', 100))),
  concurrency: Math.max(1, envInt('BENCH_BUSY_CONCURRENCY', 4)),
  payloadBytes: envInt('BENCH_BUSY_PAYLOAD_BYTES', 256),
};
// Paced phases (c, d) send smaller batches so the odd endpoint's share arrives spread over the run.
const PACED: LoadShape = {
  ...UNPACED,
  batch: Math.min(100, Math.max(1, envInt('BENCH_BUSY_PACED_BATCH', 10))),
  concurrency: Math.max(1, envInt('BENCH_BUSY_PACED_CONCURRENCY', 16)),
};
const PER_ENDPOINT = Math.max(1, envInt('BENCH_BUSY_CONFIGS_PER_ENDPOINT', 10));
const RATE = envInt('BENCH_BUSY_RATE', 0); // 0: half of Howk's delivered/s in (b)
const SLOW_MS = envInt('BENCH_BUSY_SLOW_MS', 1000);
const SICK_MS = envInt('BENCH_BUSY_SICK_MS', 800);
const TIMEOUT_MS = envInt('BENCH_BUSY_TIMEOUT_S', 120) * 1000;
const TAIL_MS = envInt('BENCH_BUSY_TAIL_S', 120) * 1000;
const WARMUP = scaled('BENCH_BUSY_WARMUP', 5000);
const REDIS_DB = envInt('BENCH_BUSY_REDIS_DB', 59);
const PHASES = new Set((process.env.BENCH_BUSY_PHASES ?? 'a,b,c,d').split(',').map((s) => s.trim()));
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

const infra = loopbackInfra(REDIS_DB, 'run `npm run bench:busy` (starts Kafka + Redis) or export them.');
const { brokers, redisBase, redisUrl } = infra;
const { runId, topics, logDir } = runNames('busy');
const knobs = Object.entries(process.env)
  .filter(([k]) => k.startsWith('BENCH_BUSY_') || k === 'HOWK_BENCH_SCALE')
  .map(([k, v]) => `${k}=${v}`);
const command = `${[...knobs, `KAFKA_BROKERS=${brokers}`, `REDIS_URL=${redisBase}`].join(' ')} npx tsx test/bench/busy.bench.ts`;

const main = async (): Promise<number> => {
  console.log(`Busy endpoint, many endpoints, slow and sick neighbours (${runId}, ${new Date().toISOString()}, commit ${gitRevision()})`);
  console.log(`  command: ${command}`);
  console.log(
    `  sizes: (a) ${N.a}, (b) ${N.b}, (c) ${N.c} per run, (d) ${N.d}; ${CONFIGS} config ids; unpaced ${UNPACED.batch}/request, ${UNPACED.concurrency} in flight; paced ${PACED.batch}/request, ${PACED.concurrency} in flight, ${PER_ENDPOINT} config ids per endpoint`,
  );
  console.log(`  ${uptime()}`);
  log(`service logs in ${logDir}`);
  await flushDb(redisUrl);

  const rx = await startReceiver();
  const apiPort = await freePort();
  const api = `http://127.0.0.1:${apiPort}`;
  const env = serviceEnv({ apiPort, brokers, runId, redisUrl, topics, secret: SECRET });
  const conns = loadConfig({ env: { ...process.env, ...env } as Record<string, string> }).delivery.max_conns_per_host;

  const svcs: Svc[] = [];
  const agent = new Agent({ connections: 32, keepAliveTimeout: 60_000, pipelining: 1, headersTimeout: 30_000, bodyTimeout: 30_000 });
  const admin = await kafkaAdmin(brokers, `${runId}-admin`);
  let code = 1;
  try {
    const apiKey = await createApiKey(env, 'enqueue,read,admin', 'busy-bench');
    const stack = await startStack({ infra, env, api, agent, logDir, conns, svcs });
    const fwdUrl = stack.forwarderUrl;
    for (const s of svcs) console.log(`  ${s.name}: ${s.command}`);
    console.log(`  forwarder pool: ${conns} connections per origin (delivery.max_conns_per_host)`);
    const { procs } = stack;

    // Warm-up of both targets: consumer group joined, code compiled, connections open.
    const warmRoute = (c: number): Route => ({ config: `warm-${c % CONFIGS}`, endpoint: `${rx.fast}/warm/${c % CONFIGS}`, cls: 'main' });
    await warmUp(
      { agent, apiKey, shape: UNPACED, route: warmRoute, rx, svcs },
      [
        ['howk', api],
        ['ceiling', fwdUrl],
      ],
      WARMUP,
    );

    const missing: string[] = [];
    type Spec = {
      name: string;
      count: number;
      shape: LoadShape;
      rate: number;
      route: (c: number) => Route;
      oddDelay: number;
      flip?: { atMs: number; delay: number };
      sample?: string;
    };
    const runPhase = async (target: 'howk' | 'ceiling', s: Spec): Promise<Phase> => {
      rx.reset();
      rx.setOddDelay(s.oddDelay);
      const load = uptime();
      console.log(`\n== ${s.name} — ${target}  (${load})`);
      const slow0 = target === 'howk' ? await endOffsets(admin, topics.slow!) : 0;
      const cpu = cpuWindow(procs);
      const sampler = target === 'howk' && s.sample ? sampleEndpoint(api, endpointHashOf(s.sample), apiKey, agent, 250) : undefined;
      const t0 = performance.now();
      const flipTimer = s.flip ? setTimeout(() => rx.setOddDelay(s.flip!.delay), s.flip.atMs) : undefined;
      const progress = setInterval(() => log(`${((performance.now() - t0) / 1000).toFixed(1)} s: delivered ${rx.arrivals.size}`), 5000);
      const enq: EnqueueResult = await enqueueAll(target === 'howk' ? api : fwdUrl, agent, apiKey, s.count, s.shape, s.route, s.rate, t0 + TIMEOUT_MS);
      const main = (c: string) => c === 'main';
      const mainDone = await waitBounded(
        t0 + TIMEOUT_MS - performance.now(),
        () => arrivedCount(rx.arrivals, enq.ids, main) >= [...enq.ids.values()].filter((x) => x.cls === 'main').length,
      );
      const tMain = performance.now();
      // Only the odd endpoint's tail gets the extra wait; late main traffic has had its deadline.
      const hasOdd = [...enq.ids.values()].some((x) => x.cls === 'odd');
      const allDone = !hasOdd || (await waitBounded(TAIL_MS, () => arrivedCount(rx.arrivals, enq.ids) >= enq.ids.size));
      clearInterval(progress);
      clearTimeout(flipTimer);
      const samples: Sample[] = sampler ? await sampler.stop() : [];
      const arrivals = new Map(rx.arrivals);
      const delivered = arrivedCount(arrivals, enq.ids);
      // Arrivals of earlier phases' webhooks (a backlog still draining, e.g. from the slow lane).
      const strays = arrivals.size - delivered;
      const cpuLines = cpu.stop(delivered);
      if (delivered < enq.ids.size) missing.push(`${s.name} (${target}): ${enq.ids.size - delivered} of ${enq.ids.size} not delivered in time`);
      const slow = target === 'howk' ? (await endOffsets(admin, topics.slow!)) - slow0 : undefined;
      const stats = target === 'howk' ? await statsLine(api, apiKey, agent) : undefined;
      console.log(
        `  accepted ${enq.accepted}/${s.count} (${enq.failures} requests failed, ${enq.retries} retried) in ${((enq.tEnd - t0) / 1000).toFixed(1)} s; delivered ${delivered}${mainDone ? '' : ' (main traffic timed out)'}${allDone ? '' : ` (the odd endpoint's tail timed out after ${TAIL_MS / 1000} s)`}; duplicates ${rx.duplicates()}; ${strays} arrivals of earlier phases' webhooks`,
      );
      console.log(`  main traffic done at ${((tMain - t0) / 1000).toFixed(1)} s, last arrival at ${((lastArrival(arrivals, enq.ids) - t0) / 1000).toFixed(1)} s`);
      if (slow !== undefined)
        console.log(`  records written to ${topics.slow}: ${slow}${stats?.slow.length ? `; slow-lane counters: ${stats.slow.map(([k, v]) => `${k} ${v}`).join(', ')}` : ''}`);
      if (stats) console.log(`  /stats last_1h: ${stats.line}`);
      console.log('  CPU:');
      console.log(cpuLines.join('\n'));
      return { name: s.name, target, load, t0, enq, arrivals, delivered, slow, samples, flipAt: s.flip ? t0 + s.flip.atMs : undefined, duplicates: rx.duplicates(), strays };
    };
    const both = async (s: Spec) => ({ ceiling: await runPhase('ceiling', s), howk: await runPhase('howk', s) });

    const cfg = (c: number) => c % CONFIGS;
    const fastRoute =
      (p: string) =>
      (c: number): Route => ({ config: `${p}-${cfg(c)}`, endpoint: `${rx.fast}/ep/${p}-${cfg(c)}`, cls: 'main' });
    // (c) and (d): each endpoint is fed by PER_ENDPOINT config ids (config k posts to endpoint
    // k mod CONFIGS), so that per-config order does not serialise the odd endpoint at 1 s each.
    const oddRoute =
      (p: string) =>
      (c: number): Route => {
        const k = c % (CONFIGS * PER_ENDPOINT);
        const ep = k % CONFIGS;
        return ep === 0 ? { config: `${p}-${k}`, endpoint: `${rx.odd}/odd/${p}`, cls: 'odd' } : { config: `${p}-${k}`, endpoint: `${rx.fast}/ep/${p}-${ep}`, cls: 'main' };
      };
    const results: Parameters<typeof report>[0] = { configs: CONFIGS };
    if (PHASES.has('a'))
      results.a = await both({
        name: '(a) one endpoint',
        count: N.a,
        shape: UNPACED,
        rate: 0,
        oddDelay: 0,
        route: (c) => ({ config: `a-${cfg(c)}`, endpoint: `${rx.fast}/busy`, cls: 'main' }),
        sample: `${rx.fast}/busy`,
      });
    if (PHASES.has('b')) results.b = await both({ name: `(b) ${CONFIGS} endpoints`, count: N.b, shape: UNPACED, rate: 0, oddDelay: 0, route: fastRoute('b') });
    const bRate = results.b ? results.b.howk.delivered / Math.max(0.001, (lastArrival(results.b.howk.arrivals, results.b.howk.enq.ids) - results.b.howk.t0) / 1000) : NaN;
    const rate = RATE || Math.max(50, Math.round((Number.isFinite(bRate) ? bRate : 1000) / 2));
    results.rate = rate;
    if (PHASES.has('c')) {
      log(`(c)/(d) offered at ${rate}/s (${RATE ? 'BENCH_BUSY_RATE' : "half of Howk's (b)"})`);
      results.c0 = await both({ name: '(c) without the slow endpoint', count: N.c, shape: PACED, rate, oddDelay: 0, route: oddRoute('c0') });
      results.c1 = await both({
        name: `(c) with the slow endpoint (${SLOW_MS} ms)`,
        count: N.c,
        shape: PACED,
        rate,
        oddDelay: SLOW_MS,
        route: oddRoute('c1'),
        sample: `${rx.odd}/odd/c1`,
      });
    }
    if (PHASES.has('d')) {
      results.d = await both({
        name: `(d) sick endpoint (1 → ${SICK_MS} ms)`,
        count: N.d,
        shape: PACED,
        rate,
        oddDelay: 1,
        flip: { atMs: (N.d / 2 / rate) * 1000, delay: SICK_MS },
        route: oddRoute('d'),
        sample: `${rx.odd}/odd/d`,
      });
    }
    console.log(`\n${report(results)}`);
    for (const m of missing) log(`WARN: ${m}`);
    code = 0;
  } catch (e) {
    logFailure(e, svcs);
  } finally {
    await admin.disconnect().catch(() => {});
    await endRun({ svcs, agent, closeReceiver: rx.close, brokers, runId, topics, keepTopics: process.env.BENCH_KEEP_TOPICS === '1', flushRedisUrl: redisUrl });
  }
  return code;
};

hardDeadline(3_600_000, '60 min');
process.exit(await main());
