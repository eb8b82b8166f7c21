// Single servers against the scaled set-up, in one run: the end-to-end benchmark
// (test/bench/e2e.bench.ts: howk-api, one worker and one scheduler as processes, batch enqueue)
// paced and saturated, first on one Kafka broker + one redis-server, then on three brokers
// (topics at replication 3, min.insync.replicas 2) + a Redis Cluster of 3 masters and 3
// replicas, each started here on free loopback ports of its own (scripts/infra/kafka.sh,
// redis.sh, kafka-cluster.sh, redis-cluster.sh; the shared servers are not used) and stopped
// after. One table: delivered/s and CPU ms per 1,000 webhooks (Howk's processes, the brokers,
// the Redis nodes, and the run's total), per set-up and load.
//
//   npm run bench:scaled
//   BENCH_N=4000 npx tsx test/bench/scaled.bench.ts
//
// Knobs: BENCH_N (6000) webhooks per measured run, BENCH_WARMUP (2000), BENCH_PACED_RATE (400)
// webhooks/s of the paced load, BENCH_SETUPS (single,cluster), BENCH_LOADS (paced,saturated).
// Other BENCH_* and HOWK_* variables reach e2e.bench.ts. Exits 1 when a run did not deliver
// everything (or a set-up did not start).
import { execFile, spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { envPositiveInt } from './bench-env';
import { fmt, log, root, setLogTag } from './busy-harness';

setLogTag('scaled');
const N = envPositiveInt('BENCH_N', 6000);
const WARMUP = process.env.BENCH_WARMUP ?? '2000';
const PACED = envPositiveInt('BENCH_PACED_RATE', 400);
const SETUPS = (process.env.BENCH_SETUPS ?? 'single,cluster').split(',').filter((s): s is Setup => s === 'single' || s === 'cluster');
const LOADS = (process.env.BENCH_LOADS ?? 'paced,saturated').split(',').filter((l) => l === 'paced' || l === 'saturated');
type Setup = 'single' | 'cluster';
const run = promisify(execFile);

/** True when nothing listens on 127.0.0.1:port (a listen there succeeds). */
const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** A base port in [from, to) with base + every offset free (below the ephemeral range, where a client's connection can take one). */
const freeBase = async (offsets: number[], from = 20_000, to = 22_000): Promise<number> => {
  for (let tries = 0; tries < 200; tries++) {
    const base = from + Math.floor(Math.random() * (to - from));
    if ((await Promise.all(offsets.map((o) => portFree(base + o)))).every(Boolean)) return base;
  }
  throw new Error('no free loopback ports for the set-up');
};

const script = async (name: string, args: string[], env: Record<string, string>): Promise<string> =>
  (await run('bash', [join(root, 'scripts/infra', name), ...args], { env: { ...process.env, ...env }, maxBuffer: 1 << 20, timeout: 300_000 })).stdout;

type Infra = { env: Record<string, string>; stop: () => Promise<void> };

const startSingle = async (): Promise<Infra> => {
  const base = await freeBase([0, 1, 2]);
  const kafka = { KAFKA_PORT: String(base), KAFKA_CONTROLLER_PORT: String(base + 1), KAFKA_DATA_DIR: `/tmp/howk-bench-scaled-kafka-${base}` };
  const redis = { REDIS_PORT: String(base + 2) };
  const stop = async () => {
    await script('kafka.sh', ['stop'], kafka).catch(() => '');
    await script('redis.sh', ['stop'], redis).catch(() => '');
    rmSync(kafka.KAFKA_DATA_DIR, { recursive: true, force: true });
    rmSync(`/tmp/howk-kafka-${base}.datadir`, { force: true });
  };
  try {
    await script('redis.sh', ['start'], redis);
    await script('kafka.sh', ['start', '--fresh'], kafka);
  } catch (e) {
    await stop();
    throw e;
  }
  return { env: { KAFKA_BROKERS: `127.0.0.1:${base}`, REDIS_URL: `redis://127.0.0.1:${base + 2}` }, stop };
};

const startCluster = async (): Promise<Infra> => {
  // Brokers base..+2, their controllers +10..+12; Redis nodes +20..+25 and their bus ports (+10000).
  const offsets = [0, 1, 2, 10, 11, 12, ...[20, 21, 22, 23, 24, 25].flatMap((o) => [o, o + 10_000])];
  const base = await freeBase(offsets);
  const kafka = { KAFKA_CLUSTER_PORT: String(base), KAFKA_CLUSTER_DIR: `/tmp/howk-bench-scaled-kafka-cluster-${base}` };
  const redis = { REDIS_CLUSTER_PORT: String(base + 20) };
  const stop = async () => {
    await script('kafka-cluster.sh', ['stop'], kafka).catch(() => '');
    await script('redis-cluster.sh', ['stop'], redis).catch(() => '');
    rmSync(kafka.KAFKA_CLUSTER_DIR, { recursive: true, force: true });
  };
  try {
    const r = /REDIS_CLUSTER_NODES=(\S+)/.exec(await script('redis-cluster.sh', ['start'], redis))?.[1];
    const k = /KAFKA_BROKERS=(\S+)/.exec(await script('kafka-cluster.sh', ['start', '--fresh'], kafka))?.[1];
    if (!r || !k) throw new Error('the cluster scripts did not report their nodes');
    return { env: { KAFKA_BROKERS: k, REDIS_URL: `redis://${r.split(',')[0]}`, BENCH_REDIS_DB: '0', HOWK_REDIS_CLUSTER_NODES: r }, stop };
  } catch (e) {
    await stop();
    throw e;
  }
};

type Result = { setup: Setup; load: string; ok: boolean; rate?: number; cpu: Map<string, number> };

/** One e2e.bench.ts run, its report passed through; the figures read from the report's lines. */
const e2e = (setup: Setup, load: string, env: Record<string, string>): Promise<Result> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/bench/e2e.bench.ts'], {
      cwd: root,
      env: { ...process.env, ...env, BENCH_N: String(N), BENCH_WARMUP: WARMUP, BENCH_RATE: load === 'paced' ? String(PACED) : '0' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      process.stdout.write(b);
    });
    child.on('close', (code) => {
      const num = (s: string) => Number(s.replace(/,/g, ''));
      const rate = /delivery throughput\s+([\d,.]+) webhooks\/s/.exec(out)?.[1];
      const cpu = new Map<string, number>();
      for (const m of out.matchAll(/^\s{4}(howk-\w+|kafka broker[^\s]*(?: :\d+)?|redis-server(?: :\d+)?)\s+[\d.]+ s .*?([\d,.]+) ms per 1,000 webhooks/gm))
        cpu.set(m[1]!, num(m[2]!));
      const total = /run total\s+([\d,.]+) ms CPU per 1,000/.exec(out)?.[1];
      if (total) cpu.set('total', num(total));
      resolve({ setup, load, ok: code === 0, rate: rate ? num(rate) : undefined, cpu });
    });
  });

const sum = (cpu: Map<string, number>, prefix: string) => [...cpu].filter(([k]) => k.startsWith(prefix)).reduce((a, [, v]) => a + v, 0);

const table = (results: Result[]): string => {
  const head = ['set-up', 'load', 'delivered/s', 'api', 'worker', 'scheduler', 'kafka (all brokers)', 'redis (all nodes)', 'run total'];
  const rows = results.map((r) => [
    r.setup === 'single' ? '1 broker + 1 redis-server' : '3 brokers RF 3 + Redis Cluster 3+3',
    r.load === 'paced' ? `paced ${fmt(PACED)}/s` : 'saturated',
    r.rate === undefined ? 'n/a' : fmt(r.rate),
    fmt(r.cpu.get('howk-api') ?? NaN),
    fmt(r.cpu.get('howk-worker') ?? NaN),
    fmt(r.cpu.get('howk-scheduler') ?? NaN),
    fmt(sum(r.cpu, 'kafka broker')),
    fmt(sum(r.cpu, 'redis-server')),
    fmt(r.cpu.get('total') ?? NaN) + (r.ok ? '' : ' (FAILED)'),
  ]);
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
};

const main = async (): Promise<number> => {
  log(`single servers against the scaled set-up: ${N} webhooks per run, warm-up ${WARMUP}, paced at ${PACED}/s; set-ups ${SETUPS.join(', ')}; loads ${LOADS.join(', ')}`);
  const results: Result[] = [];
  let failed = false;
  for (const setup of SETUPS) {
    const t = Date.now();
    let infra: Infra;
    try {
      infra = await (setup === 'single' ? startSingle() : startCluster());
    } catch (e) {
      log(`${setup}: the set-up did not start: ${(e as Error).message}`);
      failed = true;
      continue;
    }
    log(`${setup}: started in ${((Date.now() - t) / 1000).toFixed(1)} s: ${JSON.stringify(infra.env)}`);
    try {
      for (const load of LOADS) results.push(await e2e(setup, load, infra.env));
    } finally {
      await infra.stop();
    }
  }
  console.log(`\nSingle servers against the scaled set-up (${new Date().toISOString()}; CPU in ms per 1,000 webhooks delivered)\n${table(results)}\n`);
  return failed || results.some((r) => !r.ok) ? 1 : 0;
};

process.exit(await main());
