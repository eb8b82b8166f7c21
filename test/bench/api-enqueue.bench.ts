// howk-api's CPU per accepted webhook, the api alone: howk-api as a child process on real
// Kafka + Redis, no worker, a load generator posting enqueue requests. Prints the api's CPU
// per 1,000 webhooks of each measured round (one process, several rounds: their spread is
// the noise of the figure).
//
//   KAFKA_BROKERS=127.0.0.1:19092 REDIS_URL=redis://127.0.0.1:16379 npx tsx test/bench/api-enqueue.bench.ts
//
// Knobs (env): BENCH_N (10000 per round), BENCH_ROUNDS (3), BENCH_MODE (batch | single),
// BENCH_BATCH (100), BENCH_CONCURRENCY (4 batch, 64 single), BENCH_CONFIGS (50),
// BENCH_WARMUP (10000), BENCH_REDIS_DB (9, flushed at start), BENCH_API_ROOT (the checkout
// howk-api runs from; this one by default: compare two commits with the same load),
// BENCH_PERF=<file>: `perf record` the api over the last round (run with
// NODE_OPTIONS=--perf-basic-prof for JIT symbols); BENCH_CPU_PROF=<dir>: the api runs with
// --cpu-prof into that directory (its whole life; summarise with cpuprofile-top.ts);
// BENCH_API_NODE_ARGS: more node flags for the api (e.g. --trace-deopt).
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { envInt, infraPorts, loopbackInfra, runNames } from './bench-env';
import { createApiKey, flushDb } from './bench-run';
import {
  apiReady,
  deleteRunTopics,
  serviceEnv,
  CLK_TCK,
  cpuTicksOf,
  fmt,
  freePort,
  gitRevision,
  log,
  pidListening,
  root,
  setLogTag,
  sleep,
  startProcess,
  stopProcess,
  waitUntil,
  type Svc,
} from './busy-harness';
import { payloadOf as payloadWith } from './busy-load';

setLogTag('api-bench');
const MODE = (process.env.BENCH_MODE ?? 'batch') as 'batch' | 'single';
const N = envInt('BENCH_N', 10_000);
const ROUNDS = Math.max(1, envInt('BENCH_ROUNDS', 3));
const BATCH = MODE === 'single' ? 1 : Math.min(100, Math.max(1, envInt('BENCH_BATCH', 100)));
const CONCURRENCY = Math.max(1, envInt('BENCH_CONCURRENCY', MODE === 'single' ? 64 : 4));
const CONFIGS = Math.max(1, envInt('BENCH_CONFIGS', 50));
const WARMUP = envInt('BENCH_WARMUP', 10_000);
const REDIS_DB = envInt('BENCH_REDIS_DB', 9);
const API_ROOT = process.env.BENCH_API_ROOT ?? root;
const PERF = process.env.BENCH_PERF;
const CPU_PROF = process.env.BENCH_CPU_PROF;

const infra = loopbackInfra(REDIS_DB, 'export them (the api talks to 127.0.0.1 only).');
const { brokers, redisUrl } = infra;
const { runId, topics, logDir } = runNames('apibench');

const pad = 'x'.repeat(136);
const payloadOf = (seq: number) => payloadWith(pad, seq);

/** Posts `count` webhooks, CONCURRENCY requests in flight; returns how many were accepted. */
const enqueueAll = async (api: string, agent: Agent, apiKey: string, count: number, prefix: string): Promise<number> => {
  let next = 0;
  let accepted = 0;
  const chunks = Math.ceil(count / BATCH);
  const lane = async () => {
    for (let c = next++; c < chunks; c = next++) {
      const config = `${prefix}-${c % CONFIGS}`;
      const endpoint = `http://127.0.0.1:9/${config}`;
      const items: string[] = [];
      for (let i = c * BATCH; i < Math.min(count, (c + 1) * BATCH); i++) items.push(`{"endpoint":${JSON.stringify(endpoint)},"payload":${payloadOf(i)}}`);
      const single = MODE === 'single';
      // Right after the api created the topics, Kafka may not have their leaders yet: 503, retried.
      for (let attempt = 0; ; attempt++) {
        const res = await request(`${api}/webhooks/${config}/enqueue${single ? '' : '/batch'}`, {
          method: 'POST',
          body: single ? items[0]! : `{"webhooks":[${items.join(',')}]}`,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
          dispatcher: agent,
        });
        const text = await res.body.text();
        if (res.statusCode === 202) break;
        if (res.statusCode !== 503 || attempt >= 50) throw new Error(`enqueue answered ${res.statusCode}: ${text.slice(0, 200)}`);
        await sleep(200);
      }
      accepted += items.length;
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, chunks) }, lane));
  return accepted;
};

/** `node --import tsx workers/api/main.ts` of API_ROOT, with the profiler's flags when asked. */
const startApi = (env: Record<string, string>): Svc => {
  const extra = (process.env.BENCH_API_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const nodeArgs = [...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : []), ...extra];
  return startProcess('api', join(API_ROOT, 'workers/api/main.ts'), env, logDir, { nodeArgs, cwd: API_ROOT });
};

const main = async (): Promise<void> => {
  log(`run ${runId}: api from ${API_ROOT}, mode=${MODE} batch=${BATCH} concurrency=${CONCURRENCY} N=${N} x ${ROUNDS} rounds`);
  await flushDb(redisUrl);
  const apiPort = await freePort();
  const api = `http://127.0.0.1:${apiPort}`;
  const env = serviceEnv({ apiPort, brokers, runId, redisUrl, topics });
  const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 60_000, pipelining: 1 });
  const apiKey = await createApiKey(env, 'enqueue,read', 'bench');
  const svc = startApi(env);
  try {
    await waitUntil('howk-api /ready', 90_000, () => apiReady(api, agent), [svc]);
    if (WARMUP) await enqueueAll(api, agent, apiKey, WARMUP, 'warm');
    await sleep(500);
    const pid = svc.child.pid!;
    const kafkaPid = pidListening(infraPorts(infra).kafka);
    const figures: string[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const perf = PERF && r === ROUNDS - 1 ? spawn('perf', ['record', '-o', PERF, '-F', '999', '-g', '-p', String(pid)], { stdio: 'ignore' }) : undefined;
      if (perf) await sleep(300);
      const a = cpuTicksOf(pid)!;
      const k0 = cpuTicksOf(kafkaPid);
      const t = performance.now();
      const n = await enqueueAll(api, agent, apiKey, N, `cfg${r}`);
      const wall = performance.now() - t;
      const b = cpuTicksOf(pid)!;
      const k1 = cpuTicksOf(kafkaPid);
      perf?.kill('SIGINT');

      const ms = ((b - a) / CLK_TCK) * 1000;
      const kafka = k0 !== undefined && k1 !== undefined ? `, kafka ${fmt((((k1 - k0) / CLK_TCK) * 1e6) / n)}` : '';
      figures.push(fmt((ms * 1000) / n, 1));
      log(`round ${r + 1}: ${fmt(n)} webhooks in ${fmt(wall)} ms (${fmt(n / (wall / 1000))}/s); howk-api ${fmt((ms * 1000) / n, 1)} ms per 1,000${kafka}`);
      if (perf) await new Promise((res) => perf.on('exit', res));
    }
    console.log(`howk-api ms per 1,000 webhooks (${MODE}, ${gitRevision()} from ${API_ROOT}): ${figures.join(' ')}`);
  } finally {
    await stopProcess(svc);
    await agent.close().catch(() => {});
    await deleteRunTopics(brokers, runId, topics);
  }
};

await main();
process.exit(0);
