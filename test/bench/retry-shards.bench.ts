// Scheduler-pass benchmark: how long K schedulers take to move N due retries out of the retry
// schedule, and the Redis CPU it costs, for the schedule in shards (redis.retry_shards, shard
// leases, fair claims: core/pipeline/scheduler.ts) against the one sorted set it was before
// (the claim script of that version, below, K schedulers racing on the one set). On a private
// redis-server started for the run (its INFO cpu is this run's alone; shut down at the end).
// The pending topic is left out (a producer that only counts): what is measured is the
// schedule's side of a pass (claim + ack), the part that sat on one Redis slot.
//
//   npx tsx test/bench/retry-shards.bench.ts
//
// Knobs: BENCH_N (1000000) due retries per scenario, BENCH_SHARDS (16), BENCH_BATCH (500,
// scheduler.batch_size), BENCH_CONFIGS (50) configs the retries belong to, BENCH_ONLY (runs
// only the scenarios whose name starts with it).
import { execFileSync } from 'node:child_process';
import type { Redis } from 'ioredis';
import { loadConfig } from '../../core/config/load';
import { keys } from '../../core/domain/keys';
import { createSchedulerTick } from '../../core/pipeline/scheduler';
import { systemClock } from '../../core/ports/clock';
import { silentLogger } from '../../core/ports/logger';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { withScripts } from '../../workers/redis/scripts';
import { freePort } from '../helpers/procs';
import { envPositiveInt } from './bench-env';

const N = envPositiveInt('BENCH_N', 1_000_000);
const SHARDS = envPositiveInt('BENCH_SHARDS', 16);
const BATCH = envPositiveInt('BENCH_BATCH', 500);
const CONFIGS = envPositiveInt('BENCH_CONFIGS', 50);
const ONLY = process.env.BENCH_ONLY ?? '';
const LEASE = 30_000;
const TTLS = { status_ttl: 3_600_000, stats_ttl: 3_600_000, retry_data_ttl: 3_600_000 };

/** The claim of the version before the shards (one zset, due order, no fairness), for the baseline. */
const ONE_SET_CLAIM = `
local now, limit, lease, prefix = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local out = {}
local got = 0
while got < limit do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit - got)
  local dropped = 0
  for _, id in ipairs(ids) do
    local data = redis.call('GET', prefix .. id)
    if data then
      redis.call('ZADD', KEYS[1], lease, id)
      out[#out + 1] = id
      out[#out + 1] = data
      out[#out + 1] = lease
      got = got + 1
    else
      redis.call('ZREM', KEYS[1], id)
      dropped = dropped + 1
    end
  end
  if dropped == 0 then break end
end
return out`;

const data = (i: number) => {
  const id = `wh_${String(i).padStart(9, '0')}`;
  return {
    id,
    value: `{"id":"${id}","config_id":"cfg_${i % CONFIGS}","endpoint":"https://example.com/hook","endpoint_hash":"h","attempt":2,"max_attempts":5,"payload":{"n":${i}}}`,
  };
};

const cpuUs = async (r: Redis) => {
  const cpu = await r.info('cpu');
  const num = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(cpu)![1]);
  return (num('used_cpu_user') + num('used_cpu_sys')) * 1e6;
};

type Scenario = { name: string; shards: number | 'one set'; schedulers: number };
const SCENARIOS: Scenario[] = [
  { name: 'one set (before), 1 scheduler', shards: 'one set', schedulers: 1 },
  { name: 'one set (before), 3 schedulers', shards: 'one set', schedulers: 3 },
  { name: `${SHARDS} shards, 1 scheduler`, shards: SHARDS, schedulers: 1 },
  { name: `${SHARDS} shards, 3 schedulers`, shards: SHARDS, schedulers: 3 },
];

const fill = async (url: string, s: Scenario) => {
  const redis = createRedis(url);
  const due = Date.now() - 1000;
  const hot = new RedisHotState(redis, { ...TTLS, retry_shards: s.shards === 'one set' ? 1 : s.shards });
  for (let i = 0; i < N; i += 5000) {
    const chunk = Array.from({ length: Math.min(5000, N - i) }, (_, j) => data(i + j));
    if (s.shards !== 'one set') await hot.apply({ retries: chunk.map((d) => ({ id: d.id, dueAt: due, data: d.value })) });
    else {
      const p = redis.pipeline();
      for (const d of chunk) p.set(keys.retryData(d.id), d.value, 'PX', TTLS.retry_data_ttl).zadd(keys.retries(), due, d.id);
      await p.exec();
    }
  }
  await hot.close();
};

/** One scheduler of the version before: the same pass (createSchedulerTick) over the one set, until a pass finds nothing. */
const oneSetScheduler = async (url: string, moved: { n: number }) => {
  const redis = withScripts(createRedis(url));
  redis.defineCommand('benchClaimOneSet', { numberOfKeys: 1, lua: ONE_SET_CLAIM });
  const claim = (redis as unknown as { benchClaimOneSet(...a: (string | number)[]): Promise<string[]> }).benchClaimOneSet.bind(redis);
  const hot = {
    claimDueRetries: async (now: number, limit: number, leaseMs: number) => {
      const flat = await claim(keys.retries(), now, limit, now + leaseMs, keys.retryData(''));
      return Array.from({ length: flat.length / 3 }, (_, j) => ({ id: flat[3 * j]!, data: flat[3 * j + 1]!, dueAt: Number(flat[3 * j + 2]) }));
    },
    ackRetries: async (items: { id: string; leaseDueAt: number }[]) => {
      await redis.howk_ackRetries(keys.retries(), keys.retryData(''), ...items.flatMap((x) => [x.id, x.leaseDueAt]));
    },
  };
  const config = loadConfig({ env: {}, overrides: { 'scheduler.batch_size': BATCH, 'scheduler.lease': LEASE } });
  const tick = createSchedulerTick({ config, hot: hot as never, producer: { send: async () => {} } as never, clock: systemClock, log: silentLogger });
  for (;;) {
    const n = await tick();
    if (!n) break;
    moved.n += n;
  }
  await redis.quit();
};

/** One scheduler of this version: hold its shards, pass over them, until the schedule is empty. */
const shardedScheduler = async (url: string, owner: string, shards: number, moved: { n: number }) => {
  const config = loadConfig({ env: {}, overrides: { 'scheduler.batch_size': BATCH, 'scheduler.lease': LEASE, 'redis.retry_shards': shards } });
  const hot = new RedisHotState(createRedis(url), { ...TTLS, retry_shards: shards });
  const tick = createSchedulerTick({ config, hot, producer: { send: async () => {} } as never, clock: systemClock, log: silentLogger });
  let held: number[] = [];
  let heldAt = 0;
  for (;;) {
    if (Date.now() - heldAt > 1000) [held, heldAt] = [await hot.holdShards(owner, Date.now(), 10_000), Date.now()];
    const n = held.length ? await tick(held) : 0;
    moved.n += n;
    if (n === 0 && (await hot.retryCount()) === 0) break;
    if (n === 0) await new Promise((r) => setTimeout(r, 20));
  }
  await hot.releaseShards(owner);
  await hot.close();
};

const main = async () => {
  const port = await freePort();
  execFileSync('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'yes']);
  const url = `redis://127.0.0.1:${port}`;
  const admin = createRedis(url);
  try {
    console.log(`retry schedule: ${N} due retries of ${CONFIGS} configs per scenario, batch ${BATCH}`);
    for (const s of SCENARIOS.filter((x) => x.name.startsWith(ONLY))) {
      await admin.flushdb();
      await fill(url, s);
      const moved = { n: 0 };
      const cpu0 = await cpuUs(admin);
      const t0 = Date.now();
      await Promise.all(
        Array.from({ length: s.schedulers }, (_, k) => (s.shards === 'one set' ? oneSetScheduler(url, moved) : shardedScheduler(url, `bench-${k}`, s.shards, moved))),
      );
      const ms = Date.now() - t0;
      const cpu = (await cpuUs(admin)) - cpu0;
      console.log(
        `${s.name.padEnd(34)} moved ${moved.n} in ${(ms / 1000).toFixed(2)} s (${Math.round((moved.n / ms) * 1000)}/s)  redis CPU ${(cpu / 1e6).toFixed(2)} s (${(cpu / moved.n).toFixed(1)} us/retry)`,
      );
      if (moved.n !== N) throw new Error(`${s.name}: moved ${moved.n}, expected ${N}`);
    }
  } finally {
    admin.on('error', () => {});
    await admin.shutdown('NOSAVE').catch(() => {});
    admin.disconnect();
  }
};

void main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
