// Kafka requests, records and Redis commands per webhook at a light, paced load: single
// enqueues (one webhook per POST) at BENCH_KREQ_RATES webhooks/s over 50 endpoints, howk-api,
// howk-worker and howk-scheduler as processes on real Kafka + Redis, their requests counted
// inside kafkajs and ioredis (kafka-request-counter.ts). At such rates nothing shares a
// request unless the code gathers it on purpose, so these counts say what a webhook costs
// when the machine is not busy. Also prints enqueue→delivery p50/p99 and the CPU per 1,000
// webhooks of the services, the broker and Redis (the last two are shared: a hint only).
//
//   KAFKA_BROKERS=127.0.0.1:29092 REDIS_URL=redis://127.0.0.1:26379 BENCH_REDIS_DB=56 npx tsx test/bench/kafka-requests-paced.bench.ts
//
// Knobs (env): BENCH_KREQ_RATES (100,400) webhooks/s, BENCH_KREQ_PACED_S (20) seconds per
// rate, BENCH_KREQ_CONFIGS (50) config ids and endpoints, BENCH_KREQ_SETTLE_MS (1000) after
// the last arrival (the last outcomes and commits), BENCH_KREQ_ROOTS (this checkout) a comma
// list of checkouts to run the services from in turn (before / after, each needs this file's
// counter: copy test/bench/kafka-request-counter.ts and kafka-requests-role.ts into it),
// BENCH_KREQ_ROUNDS (1) passes over the roots, alternating them, BENCH_KREQ_WARMUP (25000)
// webhooks in batches before the windows, BENCH_KREQ_IDLE_S (5) seconds of an idle window
// first (requests per second with nothing to do; 0: none), BENCH_KREQ_PROF (none) a comma list
// of roles (api,worker,scheduler) run with --cpu-prof into .tmp/bench-prof/<run>/<role>/ for
// their whole life (summarise with cpuprofile-top.ts), BENCH_REDIS_DB (required).
import { join } from 'node:path';
import { Agent } from 'undici';
import { envInt, infraPorts, loopbackInfra, runNames } from './bench-env';
import { createApiKey, endRun, flushDb, hasStarted, logFailure } from './bench-run';
import {
  apiReady,
  cpuTicksOf,
  CLK_TCK,
  fmt,
  freePort,
  gitRevision,
  percentile,
  pidListening,
  root,
  serviceEnv,
  setLogTag,
  sleep,
  startProcess,
  uptime,
  waitUntil,
  type Svc,
} from './busy-harness';
import { arrivedCount, deliverAll, enqueueAll, latencies, startReceiver, type Receiver } from './busy-load';
import { diff, perWebhook, PER_WEBHOOK_COLUMNS, snapshot, sumPerWebhook, topEntries, type CountedRole, type PerWebhook } from './kafka-request-counts';

setLogTag('kafka-requests-paced');
const RATES = (process.env.BENCH_KREQ_RATES ?? '100,400')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const PACED_S = Math.max(2, envInt('BENCH_KREQ_PACED_S', 20));
const CONFIGS = Math.max(2, envInt('BENCH_KREQ_CONFIGS', 50));
const SETTLE_MS = envInt('BENCH_KREQ_SETTLE_MS', 1000);
const ROOTS = (process.env.BENCH_KREQ_ROOTS ?? root).split(',').map((s) => s.trim());
const ROUNDS = Math.max(1, envInt('BENCH_KREQ_ROUNDS', 1));
// A worker looks up the statuses of the first kafka.max_unresolved (2,000) records of each
// partition it is given (core/pipeline/known-passes.ts): one HGET per webhook for the first
// 24,000 webhooks over 12 partitions, which a long-running worker no longer pays.
const WARMUP = envInt('BENCH_KREQ_WARMUP', 25_000);
const IDLE_S = envInt('BENCH_KREQ_IDLE_S', 5);
const PROF = new Set((process.env.BENCH_KREQ_PROF ?? '').split(',').filter(Boolean));
if (!process.env.BENCH_REDIS_DB) {
  console.error('KAFKA_BROKERS, REDIS_URL and BENCH_REDIS_DB must be set');
  process.exit(2);
}
const infra = loopbackInfra(envInt('BENCH_REDIS_DB', 0), 'and BENCH_REDIS_DB too');
const { brokers, redisUrl } = infra;
const ports = infraPorts(infra);

type Result = { root: string; rate: number; webhooks: number; p50: number; p99: number; cpu: Record<string, number>; counts: PerWebhook };
const CPU_NAMES = ['api', 'worker', 'scheduler', 'kafka', 'redis'] as const;

/** A window with nothing to do: the counts and CPU per second (what a light load pays on top, divided by its rate). */
const idleWindow = async (roles: CountedRole[], runId: string): Promise<Omit<Result, 'root'>> => {
  const pids = [...roles.map((r) => r.svc.child.pid), pidListening(ports.kafka), pidListening(ports.redis)];
  const before = await Promise.all(roles.map(snapshot));
  const ticks0 = pids.map(cpuTicksOf);
  const t0 = performance.now();
  await sleep(IDLE_S * 1000);
  const after = await Promise.all(roles.map(snapshot));
  const ticks1 = pids.map(cpuTicksOf);
  const s = (performance.now() - t0) / 1000;
  const diffs = roles.map((_, i) => diff(before[i]!, after[i]!, runId));
  const cpu = Object.fromEntries(CPU_NAMES.map((name, i) => [name, (((ticks1[i] ?? NaN) - (ticks0[i] ?? NaN)) / CLK_TCK / s) * 1000]));
  console.log(`\n  idle ${s.toFixed(1)} s: CPU ms per second: ${CPU_NAMES.map((c) => `${c} ${fmt(cpu[c]!)}`).join(', ')}`);
  roles.forEach((r, i) => {
    const d = diffs[i]!;
    console.log(
      `    howk-${r.svc.name} per second: kafka ${topEntries(Object.fromEntries(Object.entries(d.apis).map(([k, v]) => [k, v.requests])), s)}; redis ${topEntries(d.redis.commands, s)}`,
    );
  });
  return { rate: 0, webhooks: 0, p50: NaN, p99: NaN, cpu, counts: sumPerWebhook(diffs.map((d) => perWebhook(d, s))) };
};

/** One paced window at `rate`: the counts, latencies and CPU per webhook. */
const pacedWindow = async (roles: CountedRole[], rx: Receiver, api: string, agent: Agent, key: string, rate: number, runId: string, svcs: Svc[]) => {
  const pids = [...roles.map((r) => r.svc.child.pid), pidListening(ports.kafka), pidListening(ports.redis)];
  rx.reset();
  const before = await Promise.all(roles.map(snapshot));
  const ticks0 = pids.map(cpuTicksOf);
  const t0 = performance.now();
  const count = rate * PACED_S;
  const shape = { batch: 1, concurrency: 64, payloadBytes: 256, single: true };
  const route = (c: number) => ({ config: `p-${c % CONFIGS}`, endpoint: `${rx.fast}/ep/${c % CONFIGS}`, cls: 'main' });
  const e = await enqueueAll(api, agent, key, count, shape, route, rate, t0 + PACED_S * 1000 + 30_000);
  // A machine too busy to keep up still gives counts: over what arrived within the bound, said in the line below.
  await waitUntil('paced deliveries', 120_000, () => arrivedCount(rx.arrivals, e.ids) >= e.ids.size, svcs).catch(() => {});
  await sleep(SETTLE_MS);
  const after = await Promise.all(roles.map(snapshot));
  const ticks1 = pids.map(cpuTicksOf);
  const ms = performance.now() - t0;
  const n = arrivedCount(rx.arrivals, e.ids);
  const lat = latencies(rx.arrivals, e.ids, () => true);
  const diffs = roles.map((_, i) => diff(before[i]!, after[i]!, runId));
  const cpu = Object.fromEntries(CPU_NAMES.map((name, i) => [name, ((((ticks1[i] ?? NaN) - (ticks0[i] ?? NaN)) / CLK_TCK) * 1e6) / Math.max(1, n)]));
  console.log(
    `\n  ${rate}/s: ${n} of ${e.ids.size} webhooks arrived in ${(ms / 1000).toFixed(1)} s (${e.failures} failed, ${rx.duplicates()} duplicates); p50 ${fmt(percentile(lat, 50), 1)} ms, p99 ${fmt(percentile(lat, 99), 1)} ms  (${uptime()})`,
  );
  console.log(`    CPU ms per 1,000: ${CPU_NAMES.map((c) => `${c} ${fmt(cpu[c]!)}`).join(', ')}; sum ${fmt(Object.values(cpu).reduce((a, b) => a + b, 0))}`);
  roles.forEach((r, i) => {
    const d = diffs[i]!;
    const p = perWebhook(d, n);
    console.log(`    howk-${r.svc.name} per webhook: ${PER_WEBHOOK_COLUMNS.map((k) => `${k} ${p[k].toFixed(2)}`).join(', ')}`);
    console.log(`      kafka: ${topEntries(Object.fromEntries(Object.entries(d.apis).map(([k, v]) => [k, v.requests])), n)}`);
    console.log(`      records: ${topEntries(d.produced, n)}; redis: ${topEntries(d.redis.commands, n)}`);
  });
  const counts = sumPerWebhook(diffs.map((d) => perWebhook(d, n)));
  return { webhooks: n, p50: percentile(lat, 50), p99: percentile(lat, 99), cpu, counts };
};

/** The services from `dir`, warmed up, then one paced window per rate. */
const runRoot = async (dir: string, rx: Receiver): Promise<Result[]> => {
  const { runId, topics, logDir } = runNames('kreqp');
  await flushDb(redisUrl);
  const apiPort = await freePort();
  const api = `http://127.0.0.1:${apiPort}`;
  const env = serviceEnv({ apiPort, brokers, runId, redisUrl, topics });
  const agent = new Agent({ connections: 64, keepAliveTimeout: 60_000 });
  const svcs: Svc[] = [];
  const out: Result[] = [];
  console.log(`\n== services from ${dir} (commit ${gitRevision(dir)}, run ${runId})`);
  try {
    const key = await createApiKey(env, 'enqueue,read,admin', 'kreqp');
    const role = (name: string): CountedRole => {
      const file = join(logDir, `${name}.json`);
      const profDir = join(root, '.tmp', 'bench-prof', runId, name);
      const nodeArgs = PROF.has(name) ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
      if (nodeArgs.length > 0) console.log(`  howk-${name} profiled into ${profDir}`);
      const svc = startProcess(name, 'test/bench/kafka-requests-role.ts', { ...env, KREQ_ROLE: name, KREQ_OUT: file }, logDir, { cwd: dir, nodeArgs });
      svcs.push(svc);
      return { svc, out: file };
    };
    const apiRole = role('api');
    await waitUntil('howk-api /ready', 90_000, () => apiReady(api, agent), svcs);
    const roles = [apiRole, role('worker'), role('scheduler')];
    for (const r of roles.slice(1)) await waitUntil(`howk-${r.svc.name} to start`, 90_000, hasStarted(r.svc), svcs);
    const shape = { batch: 100, concurrency: 4, payloadBytes: 256 };
    await deliverAll(
      { agent, apiKey: key, shape, route: (c) => ({ config: `w-${c % CONFIGS}`, endpoint: `${rx.fast}/ep/${c % CONFIGS}`, cls: 'main' }), rx, svcs },
      api,
      WARMUP,
      'warm-up',
      120_000,
      180_000,
    );
    const warm = await enqueueAll(
      api,
      agent,
      key,
      600,
      { batch: 1, concurrency: 64, payloadBytes: 256, single: true },
      (c) => ({ config: `p-${c % CONFIGS}`, endpoint: `${rx.fast}/ep/${c % CONFIGS}`, cls: 'main' }),
      200,
      performance.now() + 30_000,
    );
    await waitUntil('single warm-up', 60_000, () => arrivedCount(rx.arrivals, warm.ids) >= warm.ids.size, svcs);
    await sleep(2000);
    if (IDLE_S > 0) out.push({ root: dir, ...(await idleWindow(roles, runId)) });
    for (const rate of RATES) out.push({ root: dir, rate, ...(await pacedWindow(roles, rx, api, agent, key, rate, runId, svcs)) });
    return out;
  } catch (e) {
    logFailure(e, svcs);
    throw e;
  } finally {
    await endRun({ svcs, agent, closeReceiver: async () => {}, brokers, runId, topics, keepTopics: false, flushRedisUrl: redisUrl });
  }
};

const main = async (): Promise<number> => {
  console.log(
    `Requests per webhook at paced single enqueues (${new Date().toISOString()}, this checkout at ${gitRevision()}); rates ${RATES.join(', ')}/s, ${PACED_S} s each, ${CONFIGS} endpoints`,
  );
  console.log(`  ${uptime()}`);
  const rx = await startReceiver();
  const results: Result[] = [];
  try {
    for (let r = 0; r < ROUNDS; r++) for (const dir of ROOTS) results.push(...(await runRoot(dir, rx)));
  } catch {
    return 1;
  } finally {
    await rx.close();
  }
  console.log(`\n(per webhook; the idle rows per second, their CPU in ms per second)`);
  console.log(`| checkout | rate/s | ${PER_WEBHOOK_COLUMNS.join(' | ')} | p50 / p99 ms | CPU ms per 1,000 (${CPU_NAMES.join(' + ')}) |`);
  console.log(`|---|---|${PER_WEBHOOK_COLUMNS.map(() => '---|').join('')}---|---|`);
  for (const x of results) {
    const cpu = CPU_NAMES.map((c) => fmt(x.cpu[c]!)).join(' + ');
    const sum = fmt(Object.values(x.cpu).reduce((a, b) => a + b, 0));
    console.log(
      `| ${x.root} | ${x.rate || 'idle'} | ${PER_WEBHOOK_COLUMNS.map((k) => x.counts[k].toFixed(2)).join(' | ')} | ${fmt(x.p50, 1)} / ${fmt(x.p99, 1)} | ${sum} (${cpu}) |`,
    );
  }
  return 0;
};

process.exit(await main());
