// Status writes micro-benchmark: RedisHotState.apply's writeStatuses.lua against a private
// redis-server (started here on a free loopback port, no persistence, shut down at the end).
//
//   npx tsx test/bench/status-writes.bench.ts
//
// Per webhook, as in production: the api's 'pending' status at enqueue (batches of 100 of one
// config), then the worker's 'delivered' status with its attempt record (signature headers
// included; batches of 100 drawn from 10 configs). Reports, per webhook: Redis CPU (INFO cpu,
// user + sys), bytes Redis received (INFO stats total_net_input_bytes), this process's CPU
// in apply, Redis memory (INFO memory used_memory) per webhook stored, redis.call()s run inside the script (INFO commandstats: every command but the
// EVALSHA and the bench's own). Knobs: BENCH_N (20000) webhooks, BENCH_CONFIGS (50), BENCH_ROUNDS (3: the median
// is reported), REDIS_SERVER (redis-server), BENCH_REDIS_PORT (a private server already running).
// On a busy machine CPU time is blurred by the neighbours; instruction counts are not: run
// `valgrind --tool=callgrind redis-server --port 16410 --save '' --appendonly no`, point
// BENCH_REDIS_PORT=16410 BENCH_ROUNDS=1 at it for two BENCH_N (e.g. 4000 and 8000), shut it down,
// and divide the difference of the `totals:` lines by the difference of BENCH_N.
import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import type { HotTtls, StatusWrite } from '../../core/ports/hot-state';
import { pendingStatus } from '../../core/pipeline/enqueue';
import { attemptRecords } from '../../core/pipeline/outcome-records';
import type { Webhook } from '../../core/domain/webhook';
import { webhookId } from '../../core/domain/ids';
import { RedisHotState } from '../../workers/redis/hot-state';
import { freePort } from './busy-harness';

const N = Number(process.env.BENCH_N ?? 20_000);
const CONFIGS = Number(process.env.BENCH_CONFIGS ?? 50);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const BATCH = 100;
const TTLS: HotTtls = { status_ttl: 168 * 3_600_000, retry_data_ttl: 3_600_000, stats_ttl: 48 * 3_600_000 };

const webhook = (config: number, now: number): Webhook => ({
  id: webhookId(now),
  config_id: `bench-config-${config}`,
  endpoint: `http://127.0.0.1:40000/hooks/${config}`,
  endpoint_hash: (config.toString(16) + 'a5f3c9e1b7d2'.repeat(3)).slice(0, 32),
  payload: '{}',
  headers: {},
  attempt: 0,
  max_attempts: 8,
  deferrals: 0,
  created_at: new Date(now).toISOString(),
  scheduled_at: new Date(now).toISOString(),
});

const ns = (ms: number, i: number) => `${ms}${String(i % 1_000_000).padStart(6, '0')}`;

const delivered = (w: Webhook, at: number, i: number): StatusWrite => {
  const signed = { 'webhook-timestamp': String(Math.floor(at / 1000)), 'webhook-signature': `v1,${Buffer.from(w.id.repeat(2)).toString('base64').slice(0, 44)}` };
  const response = { kind: 'response' as const, status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 3, signed };
  const { status, attempt } = attemptRecords({ webhook: w, response, at, decision: { kind: 'delivered' } }, ns(at, i));
  return { status, attempt };
};

/** Pending batches: 100 webhooks of one config each; delivered batches: 10 webhooks from each of 10 configs. */
const workload = (now: number) => {
  const pending: StatusWrite[][] = [];
  const byConfig: Webhook[][] = Array.from({ length: CONFIGS }, () => []);
  for (let b = 0; b < N / BATCH; b++) {
    const c = b % CONFIGS;
    const ws = Array.from({ length: BATCH }, () => webhook(c, now));
    byConfig[c]!.push(...ws);
    pending.push(ws.map((w, i) => ({ status: pendingStatus(w, ns(now, b * BATCH + i)) })));
  }
  const order: Webhook[] = [];
  for (let k = 0; order.length < N; k += 10) for (const ws of byConfig) order.push(...ws.slice(k, k + 10));
  const done: StatusWrite[][] = [];
  for (let i = 0; i < order.length; i += BATCH) done.push(order.slice(i, i + BATCH).map((w, j) => delivered(w, now + 5, i + j)));
  return { pending, done };
};

/** Commands the bench sends itself: every other command counted ran inside a script (a redis.call). */
const OUTER = new Set(['evalsha', 'eval', 'info', 'script', 'flushdb', 'ping', 'client', 'select', 'hello']);

const info = async (r: Redis) => {
  const text = (await r.info('cpu')) + (await r.info('stats')) + (await r.info('commandstats'));
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(text)![1]);
  let calls = 0;
  for (const m of text.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) if (!OUTER.has(m[1]!)) calls += Number(m[2]);
  return { cpuUs: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6, bytes: field('total_net_input_bytes'), calls };
};

const phase = async (hot: RedisHotState, admin: Redis, batches: StatusWrite[][]) => {
  const before = await info(admin);
  const cpu = process.cpuUsage();
  for (const statuses of batches) await hot.apply({ statuses });
  const node = process.cpuUsage(cpu);
  const after = await info(admin);
  const n = batches.reduce((a, b) => a + b.length, 0);
  return { redisUs: (after.cpuUs - before.cpuUs) / n, bytes: (after.bytes - before.bytes) / n, nodeUs: (node.user + node.system) / n, calls: (after.calls - before.calls) / n };
};

const usedMemory = async (r: Redis) => Number(/used_memory:(\d+)/.exec(await r.info('memory'))![1]);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const fmt = (x: number) => x.toFixed(1).padStart(8);

const main = async () => {
  // BENCH_REDIS_PORT: a private server of your own, already running (e.g. to attach perf to it); flushed, left running.
  const given = Number(process.env.BENCH_REDIS_PORT ?? 0);
  const port = given || (await freePort());
  const server = given
    ? undefined
    : spawn(process.env.REDIS_SERVER ?? 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const admin = new Redis({ port, host: '127.0.0.1', retryStrategy: (n) => (n > 50 ? null : 100) });
  admin.on('error', () => undefined);
  await admin.ping();
  const hot = new RedisHotState(new Redis({ port, host: '127.0.0.1' }), TTLS);
  const memory: number[] = [];
  const rows: Record<string, { redisUs: number; bytes: number; nodeUs: number; calls: number }[]> = { pending: [], delivered: [] };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await admin.flushdb();
      const now = Date.now();
      const { pending, done } = workload(now);
      // Warm-up: the script is loaded (NOSCRIPT, then EVAL) and the code paths are hot.
      const warm = workload(now - 1000);
      for (const b of [...warm.pending.slice(0, 5), ...warm.done.slice(0, 5)]) await hot.apply({ statuses: b });
      const before = await usedMemory(admin);
      rows.pending!.push(await phase(hot, admin, pending));
      rows.delivered!.push(await phase(hot, admin, done));
      memory.push(((await usedMemory(admin)) - before) / N);
    }
  } finally {
    await hot.close();
    if (server) await admin.call('SHUTDOWN', 'NOSAVE').catch(() => undefined);
    admin.disconnect();
    server?.kill();
  }
  console.log(`status writes: ${N} webhooks, ${CONFIGS} configs, batches of ${BATCH}, median of ${ROUNDS} rounds (per webhook)`);
  console.log(`${'write'.padEnd(10)}${'redis us'.padStart(10)}${'bytes'.padStart(10)}${'node us'.padStart(10)}${'calls'.padStart(10)}`);
  let total = [0, 0, 0, 0];
  for (const [name, rs] of Object.entries(rows)) {
    const m = [median(rs.map((r) => r.redisUs)), median(rs.map((r) => r.bytes)), median(rs.map((r) => r.nodeUs)), median(rs.map((r) => r.calls))];
    total = total.map((t, i) => t + m[i]!);
    console.log(`${name.padEnd(10)}${m.map((x) => fmt(x).padStart(10)).join('')}`);
  }
  console.log(`${'both'.padEnd(10)}${total.map((x) => fmt(x).padStart(10)).join('')}`);
  console.log(`Redis memory per webhook once both are written: ${median(memory).toFixed(0)} bytes`);
};

await main();
