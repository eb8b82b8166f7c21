// Throughput of the embedded mode: howk-dev (one process, its SQLite log in a fresh data
// folder) → a loopback receiver. No Kafka or Redis.
//
//   npm run bench:embedded
//   BENCH_N=2000 BENCH_WARMUP=200 npm run bench:embedded      # a short smoke run
//
// Knobs (env):
//   BENCH_N (20000)        webhooks in the measured run
//   BENCH_WARMUP (1000)    webhooks delivered before timing starts
//   BENCH_CONCURRENCY (4)  batch requests (100 webhooks each) in flight
//   BENCH_CONFIGS (50)     config ids the batch requests rotate over (the log's partition key)
//   BENCH_ENDPOINTS (50)   endpoints (paths) the webhooks rotate over
//   BENCH_ORIGINS (8)      receiver ports they are spread over (connection slots are per origin)
//   BENCH_TIMEOUT_S (180)  the run fails when not everything is delivered by then
//   BENCH_TARGET (2000)    the delivered/s figure the summary compares with
//   BENCH_MEMORY=1         run howk-dev with --memory instead (the same pipeline without the file)
// Any HOWK_* variable in the environment reaches howk-dev.
//
// Delivered/s is measured at the receiver: distinct webhooks answered 200, from the first to
// the last of the measured run. Exits 1 when not every accepted webhook arrived in time.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnRole, stopProc } from '../helpers/procs';

const envInt = (name: string, def: number): number => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isFinite(v) || v < 0) throw new Error(`${name} must be a non-negative number`);
  return Math.floor(v);
};
const N = envInt('BENCH_N', 20_000);
const WARMUP = envInt('BENCH_WARMUP', 1000);
const CONCURRENCY = Math.max(1, envInt('BENCH_CONCURRENCY', 4));
const TIMEOUT_S = envInt('BENCH_TIMEOUT_S', 180);
const TARGET = envInt('BENCH_TARGET', 2000);
const ENDPOINTS = Math.max(1, envInt('BENCH_ENDPOINTS', 50));
const CONFIGS = Math.max(1, envInt('BENCH_CONFIGS', 50));
const ORIGINS = Math.max(1, envInt('BENCH_ORIGINS', 8));
const MEMORY = process.env.BENCH_MEMORY === '1';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const seen = new Set<string>();
let firstAt = 0;
let lastAt = 0;
let measuring = false;
const handle = (req: IncomingMessage, res: ServerResponse) => {
  req.resume();
  req.on('end', () => {
    const id = String(req.headers['webhook-id']);
    if (measuring && !seen.has(id)) {
      seen.add(id);
      firstAt ||= performance.now();
      lastAt = performance.now();
    }
    res.writeHead(200).end();
  });
};
// Several origins (receiver ports): the worker's connection slots are per origin.
const receivers = await Promise.all(
  Array.from({ length: ORIGINS }, async () => {
    const s = createServer(handle);
    s.keepAliveTimeout = 60_000;
    const p = await freePort();
    await new Promise<void>((r) => s.listen(p, '127.0.0.1', r));
    return { s, port: p };
  }),
);

const dir = mkdtempSync(join(tmpdir(), 'howk-bench-embedded-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const dev = spawnRole('dev', { HOWK_API_PORT: String(port), HOWK_API_HOST: '127.0.0.1', HOWK_LOG_LEVEL: 'warn' }, MEMORY ? ['--memory'] : ['--data', dir]);
const cleanup = async () => {
  await stopProc(dev);
  await Promise.all(receivers.map((x) => new Promise<void>((r) => x.s.close(() => r()))));
  rmSync(dir, { recursive: true, force: true });
};

try {
  const readyBy = Date.now() + 60_000;
  while ((await fetch(`${base}/ready`).catch(() => null))?.status !== 200) {
    if (Date.now() > readyBy) throw new Error(`howk-dev not ready:\n${dev.output()}`);
    await sleep(200);
  }
  const payload = { kind: 'bench', text: 'x'.repeat(200) };
  const enqueue = async (count: number, tag: string) => {
    let next = 0;
    const lane = async () => {
      while (next < count) {
        const n = Math.min(100, count - next);
        const config = `bench-${tag}-${(next / 100) % CONFIGS}`;
        next += n;
        const webhooks = Array.from({ length: n }, (_, i) => ({ endpoint: `http://127.0.0.1:${receivers[i % ORIGINS]!.port}/hook/${i % ENDPOINTS}`, payload }));
        for (;;) {
          const res = await fetch(`${base}/webhooks/${config}/enqueue/batch`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ webhooks }),
          });
          await res.body?.cancel();
          if (res.status === 202) break;
          await sleep(200);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  };
  const waitDelivered = async (count: number) => {
    const by = Date.now() + TIMEOUT_S * 1000;
    while (seen.size < count) {
      if (Date.now() > by) throw new Error(`only ${seen.size} of ${count} delivered within ${TIMEOUT_S} s`);
      await sleep(50);
    }
  };

  measuring = true;
  if (WARMUP) {
    await enqueue(WARMUP, 'warmup');
    await waitDelivered(WARMUP);
    seen.clear();
    firstAt = 0;
  }
  const t0 = performance.now();
  await enqueue(N, 'run');
  const enqueuedS = (performance.now() - t0) / 1000;
  await waitDelivered(N);
  const deliveredPerS = N / ((lastAt - firstAt) / 1000);
  const dbBytes = MEMORY ? 0 : statSync(join(dir, 'howk.db')).size;
  console.log(
    JSON.stringify(
      {
        mode: MEMORY ? 'memory' : 'sqlite',
        webhooks: N,
        delivered_per_s: Math.round(deliveredPerS),
        accepted_per_s: Math.round(N / enqueuedS),
        target_per_s: TARGET,
        meets_target: deliveredPerS >= TARGET,
        db_mb: +(dbBytes / 1e6).toFixed(1),
      },
      null,
      2,
    ),
  );
  await cleanup();
} catch (e) {
  console.error(e instanceof Error ? e.message : String(e));
  await cleanup();
  process.exit(1);
}
