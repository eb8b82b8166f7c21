// Lua benchmark (docs/BENCHMARKS.md), two parts:
//  (a) per-delivery overhead of a small delivery script: the call the worker makes before
//      signing (core/pipeline/attempt.ts → runDeliveryScript, same limits), timed one by one,
//      in this process (the edge's way) and through the worker-thread pool (howk-api and
//      howk-worker's way, workers/node/lua-pool). Without a script the worker makes no call.
//  (b) throughput of POST /incoming/fanout (test/fixtures/transformers/fanout.lua, 3 webhooks
//      per request) with howk-api and howk-worker as child processes on real Kafka + Redis,
//      delivering to a loopback receiver; then the same 3 webhooks as a plain batch enqueue,
//      without and with a small delivery script, whose worker CPU difference is the script's
//      cost inside a running worker.
//
//   npm run bench:lua                                 # starts Kafka + Redis unless given
//   KAFKA_BROKERS=127.0.0.1:19092 REDIS_URL=redis://127.0.0.1:16379 npx tsx test/bench/lua.bench.ts
//
// Knobs: BENCH_SCRIPT_RUNS (5000) runs per script in (a); BENCH_INCOMING_N (2000) requests
// in (b); BENCH_CONCURRENCY (16) requests in flight; BENCH_REDIS_DB (39, flushed).
import { readFileSync } from 'node:fs';
import { cpuUsage } from 'node:process';
import { loadavg } from 'node:os';
import { Kafka, logLevel } from 'kafkajs';
import { Agent, request } from 'undici';
import { loadConfig } from '../../core/config/load';
import { DEFAULT_LIMITS, runDeliveryScript, runTransformer } from '../../core/lua';
import { createLuaPool } from '../../workers/node/lua-pool/pool';
import { createRedis } from '../../workers/redis/client';
import { installTransformers, readFixture } from '../fixtures/transformers/install';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver } from '../helpers/receiver';
import { envPositiveInt } from './bench-env';

const RUNS = envPositiveInt('BENCH_SCRIPT_RUNS', 5000);
const N = envPositiveInt('BENCH_INCOMING_N', 2000);
const CONCURRENCY = envPositiveInt('BENCH_CONCURRENCY', 16);
const REDIS_DB = envPositiveInt('BENCH_REDIS_DB', 39);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

// ---------------------------------------------------------------- (a) ----
const SMALL_SCRIPT = "request.headers['X-Custom'] = 'value'";
const SCRIPTS: [string, string][] = [
  ['set one header (small delivery script)', SMALL_SCRIPT],
  ['read the payload, set 2 headers', "local p = request.payload\nrequest.headers['X-Order'] = p.order_id\nrequest.headers['X-Amount'] = p.amount"],
  ['rewrite the payload (re-serialized body)', 'request.payload.amount_cents = request.payload.amount * 100'],
];
const PAYLOAD = JSON.stringify({
  order_id: 'ord_123',
  amount: 12.5,
  currency: 'EUR',
  customer: { id: 'cus_9', email: 'ada@example.com' },
  items: [
    { sku: 'book', qty: 2 },
    { sku: 'pen', qty: 1 },
  ],
  note: 'x'.repeat(60),
});
const limits = { timeoutMs: DEFAULT_LIMITS.timeoutMs, memoryLimitMb: DEFAULT_LIMITS.memoryLimitMb };

const measure = async (name: string, run: () => Promise<unknown>) => {
  for (let i = 0; i < Math.min(500, RUNS); i++) await run();
  const times: number[] = [];
  const cpu0 = cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < RUNS; i++) {
    const s = performance.now();
    await run();
    times.push((performance.now() - s) * 1000);
  }
  const wall = (performance.now() - t0) * 1000;
  const cpu = cpuUsage(cpu0);
  times.sort((a, b) => a - b);
  return `| ${name} | ${pct(times, 0.5).toFixed(0)} | ${pct(times, 0.99).toFixed(0)} | ${(wall / RUNS).toFixed(0)} | ${((cpu.user + cpu.system) / RUNS).toFixed(0)} |`;
};

const scriptOverhead = async () => {
  const rows: string[] = [];
  const input = {
    payload: PAYLOAD,
    headers: { 'x-tenant': 't1' },
    config_id: 'bench',
    attempt: 0,
    webhook_id: 'wh_01J0000000000000000000000',
    endpoint: 'https://example.com/hook',
    max_attempts: 10,
    retry_on_status: [429, 503],
  };
  const pool = createLuaPool({ limits });
  const fanout = await readFixture('fanout.lua', 'http://127.0.0.1:8089');
  const order = JSON.stringify({ id: 'ord_1', amount_cents: 1000, currency: 'EUR', email: 'ada@example.com', items: [{ sku: 'book', qty: 1 }] });
  for (const [where, engine] of [
    ['in-process', undefined],
    ['worker thread', pool],
  ] as const) {
    for (const [name, code] of SCRIPTS) rows.push(await measure(`${name}, ${where}`, () => runDeliveryScript(code, input, { limits, engine })));
    // For comparison: the transformer of part (b), as /incoming runs it (3 howk.post calls).
    rows.push(
      await measure(`transformer fanout.lua (3 posts), ${where}`, () =>
        runTransformer(fanout, { body: order, headers: { 'content-type': 'application/json' }, script: 'fanout' }, { limits, allowedDomains: ['127.0.0.1'], engine }),
      ),
    );
  }
  await pool.close();
  console.log(`\n(a) Lua run cost: ${RUNS} runs each after 500 warm-up runs (load average ${load()})\n`);
  console.log(['| script | median µs | p99 µs | mean µs | CPU µs/run |', '|---|---:|---:|---:|---:|', ...rows].join('\n'));
};

// ---------------------------------------------------------------- (b) ----
const incomingThroughput = async () => {
  const brokers = requireEnv('KAFKA_BROKERS');
  const redisBase = requireEnv('REDIS_URL').replace(/\/\d*$/, '');
  const runId = uniq('lua-bench');
  const topics = Object.fromEntries(Object.keys(loadConfig({ env: {} }).kafka.topics).map((k) => [k, `${runId}.${k}`]));
  const redis = createRedis(`${redisBase}/${REDIS_DB}`);
  await redis.flushdb();
  await redis.quit();

  const rx = await startReceiver();
  const fx = await installTransformers(rx.url('').replace(/\/$/, ''));
  const port = await freePort();
  const api = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    HOWK_API_HOST: '127.0.0.1',
    HOWK_API_PORT: String(port),
    HOWK_API_AUTH_ENABLED: 'false',
    HOWK_KAFKA_BROKERS: brokers,
    HOWK_KAFKA_CONSUMER_GROUP: `${runId}-workers`,
    HOWK_REDIS_URL: `${redisBase}/${REDIS_DB}`,
    HOWK_SIGNING_DEFAULT_SECRET: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    HOWK_DELIVERY_ALLOWED_NETWORKS: '127.0.0.1/32',
    HOWK_TRANSFORMER_SCRIPT_DIRS: fx.dir,
    HOWK_LOG_LEVEL: 'warn',
  };
  for (const [k, v] of Object.entries(topics)) env[`HOWK_KAFKA_TOPICS_${k.toUpperCase()}`] = v;
  const procs: Proc[] = [];
  const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 60_000 });
  try {
    procs.push(spawnRole('api', env));
    await waitFor(async () => (await fetch(`${api}/ready`).catch(() => undefined))?.ok, { timeoutMs: 90_000, intervalMs: 200, what: `howk-api /ready\n${procs[0]!.output()}` });
    procs.push(spawnRole('worker', env));

    const send = async (path: string, body: string) => {
      const s = performance.now();
      const res = await request(`${api}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: agent });
      const out = (await res.body.json()) as { count?: number; results?: unknown[] };
      if (res.statusCode >= 300 || (out.count ?? out.results?.length) !== 3) throw new Error(`${path} answered ${res.statusCode}: ${JSON.stringify(out)}`);
      return performance.now() - s;
    };
    const order = (i: number) => ({ id: `${runId}-${i}`, amount_cents: 1000 + i, currency: 'EUR', email: 'ada@example.com', items: [{ sku: 'book', qty: 1 }] });
    const incoming = (i: number) => send('/incoming/fanout', JSON.stringify(order(i)));
    // The control: the same three webhooks as a plain batch enqueue, no Lua in the api; config
    // `scripted` has a small delivery script (SMALL_SCRIPT), run by the worker for each of them.
    const batch = (config: string) => (i: number) => {
      const o = order(i);
      const base = rx.url('').replace(/\/$/, '');
      return send(
        `/webhooks/${config}/enqueue/batch`,
        JSON.stringify({
          webhooks: [
            { endpoint: `${base}/warehouse`, payload: { order_id: o.id, items: o.items }, headers: { 'X-Destination': 'warehouse' }, idempotency_key: `${o.id}:warehouse` },
            {
              endpoint: `${base}/billing`,
              payload: { order_id: o.id, amount_cents: o.amount_cents, currency: o.currency },
              headers: { 'X-Destination': 'billing' },
              idempotency_key: `${o.id}:billing`,
            },
            {
              endpoint: `${base}/email`,
              payload: { to: o.email, template: 'order_confirmation', order_id: o.id },
              headers: { 'X-Destination': 'email' },
              idempotency_key: `${o.id}:email`,
            },
          ],
        }),
      );
    };
    const unique = () => new Set(rx.received.map((r) => r.headers['webhook-id'])).size;
    const cpuMs = (p: Proc) => {
      const f = readFileSync(`/proc/${p.child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime, in clock ticks of 10 ms
    };

    const put = await request(`${api}/config/scripted/script`, { method: 'PUT', body: SMALL_SCRIPT, headers: { 'content-type': 'text/plain' }, dispatcher: agent });
    if (put.statusCode !== 200) throw new Error(`PUT script answered ${put.statusCode}: ${await put.body.text()}`);
    await put.body.dump();
    // Warm-up: the worker has joined its group and every path is hot before timing starts.
    for (let i = 0; i < 50; i++) await incoming(-1 - i);
    for (let i = 0; i < 50; i++) await batch('plain')(-100 - i);
    for (let i = 0; i < 50; i++) await batch('scripted')(-200 - i);
    await waitFor(() => unique() >= 450, { timeoutMs: 120_000, what: 'warm-up deliveries' });
    if (!rx.received.some((r) => r.headers['x-custom'] === 'value')) throw new Error('the delivery script did not run');

    const phase = async (name: string, call: (i: number) => Promise<number>, offset: number) => {
      rx.received.length = 0;
      const latencies: number[] = [];
      let next = 0;
      const [api0, worker0] = procs.map(cpuMs);
      const t0 = Date.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < N) latencies.push(await call(offset + next++));
        }),
      );
      const accepted = Date.now() - t0;
      await waitFor(() => unique() >= 3 * N, { timeoutMs: 300_000, intervalMs: 20, what: `${3 * N} deliveries` });
      const delivered = Math.max(...rx.received.map((r) => r.at)) - t0;
      const [api1, worker1] = procs.map(cpuMs);
      latencies.sort((a, b) => a - b);
      const workerMsPerRequest = (worker1! - worker0!) / N;
      return {
        workerMsPerRequest,
        row: `| ${name} | ${(N / (accepted / 1000)).toFixed(0)} | ${((3 * N) / (accepted / 1000)).toFixed(0)} | ${((3 * N) / (delivered / 1000)).toFixed(0)} | ${pct(latencies, 0.5).toFixed(1)} / ${pct(latencies, 0.99).toFixed(1)} | ${((api1! - api0!) / N).toFixed(2)} / ${((worker1! - worker0!) / N).toFixed(2)} | ${rx.received.length - 3 * N} | ${load()} |`,
      };
    };
    // The plain batch runs twice, around the scripted one, to show how much the order moves the figures.
    const phases = [
      await phase('POST /incoming/fanout (Lua transformer, 3 posts)', incoming, 0),
      await phase('control: POST /webhooks/plain/enqueue/batch of 3, no script', batch('plain'), N),
      await phase('POST /webhooks/scripted/enqueue/batch of 3, delivery script', batch('scripted'), 2 * N),
      await phase('control again: plain batch of 3, no script', batch('plain'), 3 * N),
    ];
    const rows = phases.map((p) => p.row);
    const scriptUs = ((phases[2]!.workerMsPerRequest - (phases[1]!.workerMsPerRequest + phases[3]!.workerMsPerRequest) / 2) / 3) * 1000;
    console.log(`\nworker CPU per webhook, with the small delivery script minus without (mean of both controls): ${scriptUs.toFixed(0)} µs`);
    console.log(`\n(b) ${N} requests of 3 webhooks each, ${CONCURRENCY} in flight; howk-api and howk-worker as processes\n`);
    console.log(
      [
        '| requests | requests/s | webhooks/s enqueued | webhooks/s delivered | latency p50 / p99 ms | CPU ms per request: api / worker | duplicates | load average after |',
        '|---|---:|---:|---:|---|---|---:|---|',
        ...rows,
      ].join('\n'),
    );
  } finally {
    for (const p of procs.reverse()) await stopProc(p);
    await agent.close();
    await rx.close();
    await fx.remove();
    const admin = new Kafka({ clientId: runId, brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => undefined);
    await admin.disconnect();
  }
};

console.log(`Node ${process.version}; load average at start ${load()}`);
await scriptOverhead();
await incomingThroughput();
process.exit(0);
