// Kafka requests per 1,000 webhooks: howk-api and howk-worker as processes on real Kafka +
// Redis (their requests counted by API inside kafkajs: kafka-request-counter.ts), a burst
// to one loopback endpoint and one spread over many, as in busy.bench.ts (a) and (b). Each
// phase reports, per service and API, the requests, request and response bytes and the
// broker's wait per 1,000 webhooks delivered, the records produced and taken, and the CPU of
// the services and of the broker (a hint only: the broker is shared). An idle window first
// gives the requests a second that the services send with nothing to do.
//
//   KAFKA_BROKERS=127.0.0.1:19092 REDIS_URL=redis://127.0.0.1:16379 BENCH_REDIS_DB=56 npx tsx test/bench/kafka-requests.bench.ts
//
// Knobs (env): BENCH_KREQ_N (5000) webhooks per phase, BENCH_KREQ_PHASES (a,b),
// BENCH_KREQ_CONFIGS (50), BENCH_KREQ_IDLE_S (5), BENCH_KREQ_SETTLE_MS (1000) after the last
// arrival before the window closes (the last outcomes and commits), BENCH_REDIS_DB (required).
import { join } from 'node:path';
import { Agent } from 'undici';
import { envInt, infraPorts, loopbackInfra, runNames } from './bench-env';
import { createApiKey, endRun, flushDb, hasStarted, logFailure } from './bench-run';
import { apiReady, cpuTicksOf, CLK_TCK, fmt, freePort, gitRevision, pidListening, serviceEnv, setLogTag, sleep, startProcess, uptime, waitUntil, type Svc } from './busy-harness';
import { deliverAll, startReceiver, type LoadShape, type Route } from './busy-load';
import type { Counts } from './kafka-request-counter';
import { diff as diffCounts, snapshot, type CountedRole } from './kafka-request-counts';

setLogTag('kafka-requests');
const N = Math.max(100, envInt('BENCH_KREQ_N', 5000));
const PHASES = (process.env.BENCH_KREQ_PHASES ?? 'a,b').split(',').map((s) => s.trim());
const CONFIGS = Math.max(2, envInt('BENCH_KREQ_CONFIGS', 50));
const IDLE_MS = envInt('BENCH_KREQ_IDLE_S', 5) * 1000;
const SETTLE_MS = envInt('BENCH_KREQ_SETTLE_MS', 1000);
const SHAPE: LoadShape = { batch: 100, concurrency: 4, payloadBytes: 256 };
if (!process.env.BENCH_REDIS_DB) {
  console.error('KAFKA_BROKERS, REDIS_URL and BENCH_REDIS_DB must be set');
  process.exit(2);
}
const infra = loopbackInfra(envInt('BENCH_REDIS_DB', 0), 'and BENCH_REDIS_DB too');
const { brokers, redisUrl } = infra;
const { runId, topics, logDir } = runNames('kreq');

type Role = CountedRole;
const diff = (a: Counts, b: Counts): Counts => diffCounts(a, b, runId);

/** Lines of one role's counts, scaled per 1,000 webhooks (per second for the idle window). */
const table = (name: string, c: Counts, per: number, unit: string): string[] => {
  const s = (n: number, d = 1) => fmt(n * per, d);
  const rows = Object.entries(c.apis)
    .filter(([, v]) => v.requests > 0)
    .sort((x, y) => y[1].requests - x[1].requests)
    .map(
      ([k, v]) =>
        `    ${k.padEnd(18)} ${s(v.requests).padStart(8)} req  ${s(v.requestBytes / 1024).padStart(8)} KB out  ${s(v.responseBytes / 1024).padStart(8)} KB in  wait ${fmt(v.waitMs / Math.max(1, v.requests), 1)} ms/req`,
    );
  const total = Object.values(c.apis).reduce((a, v) => a + v.requests, 0);
  const prod = Object.entries(c.produced).map(([k, v]) => `${k} ${s(v)}`);
  const fetches = Object.entries(c.fetches)
    .filter(([, v]) => v.requests > 0)
    .map(([k, v]) => `${k || 'group'} ${s(v.requests)} (${s(v.responseBytes / 1024)} KB)`);
  return [
    `  ${name}: ${s(total)} requests ${unit}`,
    ...rows,
    `    fetches by consumer group: ${fetches.join(', ') || 'none'}`,
    `    records produced ${unit}: ${prod.join(', ') || 'none'} in ${s(c.producedBatches)} sendBatch calls; records taken ${s(c.taken)} in ${s(c.takenBatches)} batches`,
    `    redis ${unit}: ${s(Object.values(c.redis.commands).reduce((x, y) => x + y, 0))} commands in ${s(c.redis.roundTrips)} round trips`,
  ];
};

const main = async (): Promise<number> => {
  console.log(`Kafka requests per 1,000 webhooks (${runId}, ${new Date().toISOString()}, commit ${gitRevision()}); ${N} webhooks per phase, ${SHAPE.batch} per request`);
  console.log(`  ${uptime()}`);
  await flushDb(redisUrl);
  const rx = await startReceiver();
  const apiPort = await freePort();
  const api = `http://127.0.0.1:${apiPort}`;
  const env = serviceEnv({ apiPort, brokers, runId, redisUrl, topics });
  const agent = new Agent({ connections: 16, keepAliveTimeout: 60_000 });
  const svcs: Svc[] = [];
  try {
    const key = await createApiKey(env, 'enqueue,read,admin', 'kreq');
    const role = (name: string): Role => {
      const out = join(logDir, `${name}.json`);
      const svc = startProcess(name, 'test/bench/kafka-requests-role.ts', { ...env, KREQ_ROLE: name, KREQ_OUT: out }, logDir);
      svcs.push(svc);
      return { svc, out };
    };
    const apiRole = role('api');
    await waitUntil('howk-api /ready', 90_000, () => apiReady(api, agent), svcs);
    const worker = role('worker');
    await waitUntil('howk-worker to start', 90_000, hasStarted(worker.svc), svcs);
    const roles = [apiRole, worker];
    const brokerPid = pidListening(infraPorts(infra).kafka);
    const run = async (count: number, route: (c: number) => Route) =>
      (await deliverAll({ agent, apiKey: key, shape: SHAPE, route, rx, svcs }, api, count, 'deliveries', 120_000, 120_000)).ids.size;
    await run(1000, (c) => ({ config: `warm-${c % CONFIGS}`, endpoint: `${rx.fast}/warm/${c % CONFIGS}`, cls: 'main' }));
    await sleep(2000);
    const window = async (what: string, body: () => Promise<number>, perSecond = false) => {
      const before = await Promise.all(roles.map(snapshot));
      const ticks0 = [...roles.map((r) => cpuTicksOf(r.svc.child.pid)), cpuTicksOf(brokerPid)];
      const t0 = performance.now();
      const delivered = await body();
      const ms = performance.now() - t0;
      const after = await Promise.all(roles.map(snapshot));
      const ticks1 = [...roles.map((r) => cpuTicksOf(r.svc.child.pid)), cpuTicksOf(brokerPid)];
      const per = perSecond ? 1000 / ms : 1000 / Math.max(1, delivered);
      const unit = perSecond ? 'a second' : 'per 1,000 webhooks';
      const cpu = ['howk-api', 'howk-worker', 'kafka broker (shared)'].map((n, i) => `${n} ${fmt((((ticks1[i] ?? NaN) - (ticks0[i] ?? NaN)) / CLK_TCK) * 1000 * per)} ms`);
      console.log(`\n== ${what}: ${delivered} delivered in ${(ms / 1000).toFixed(1)} s  (${uptime()})`);
      console.log(`  CPU ${unit}: ${cpu.join(', ')}`);
      roles.forEach((r, i) => console.log(table(`howk-${r.svc.name}`, diff(before[i]!, after[i]!), per, unit).join('\n')));
    };
    await window('idle', () => sleep(IDLE_MS).then(() => 0), true);
    const settle = (f: () => Promise<number>) => async () => {
      const n = await f();
      await sleep(SETTLE_MS);
      return n;
    };
    if (PHASES.includes('a'))
      await window(
        '(a) one endpoint',
        settle(() => run(N, (c) => ({ config: `a-${c % CONFIGS}`, endpoint: `${rx.fast}/busy`, cls: 'main' }))),
      );
    if (PHASES.includes('b'))
      await window(
        `(b) ${CONFIGS} endpoints`,
        settle(() => run(N, (c) => ({ config: `b-${c % CONFIGS}`, endpoint: `${rx.fast}/ep/${c % CONFIGS}`, cls: 'main' }))),
      );
    return 0;
  } catch (e) {
    logFailure(e, svcs);
    return 1;
  } finally {
    await endRun({ svcs, agent, closeReceiver: rx.close, brokers, runId, topics, keepTopics: false, flushRedisUrl: redisUrl });
  }
};

process.exit(await main());
