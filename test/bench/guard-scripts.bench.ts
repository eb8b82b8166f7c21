// Guard scripts micro-benchmark: Redis CPU per webhook of admitDelivery.lua + completeDelivery.lua,
// called through workers/redis/guards.ts as a worker calls them (batches of admissions, then
// the completions of those that went), on a private redis-server started for the run (its
// `INFO cpu` is this run's alone; it is shut down at the end). Also reported: this process's
// CPU per webhook (guards.ts + ioredis + the driver), the commands the scripts run per webhook
// and the bytes Redis received per webhook (INFO stats total_net_input_bytes: the calls' size).
// One more run per scenario reads INFO commandstats and INFO cpu around every call, to split
// the commands (and, roughly, the CPU: INFO's own cost blurs it) between admitDelivery and
// completeDelivery (BENCH_SPLIT=0 leaves it out: e.g. under callgrind, where INFO's own cost
// would blur the totals).
//
//   npx tsx test/bench/guard-scripts.bench.ts
//
// Knobs: BENCH_N (20000) webhooks per scenario, BENCH_BATCH (100) requests per call,
// BENCH_RUNS (3) runs per scenario (the median is reported), BENCH_ONLY (runs only the
// scenarios whose name starts with it, or is it less a final '$'), BENCH_REDIS_PORT (use that redis-server and leave it
// running: e.g. one under `valgrind --tool=callgrind`, whose instruction count is steadier than
// CPU time on a busy machine). Defaults of the config (circuit on, endpoint limit 50, no rate
// limit, canary required); the 'host limit' scenario also sets a host ceiling of 200. Each
// endpoint is asked for at most its fast-lane limit per call (as the worker's connection slots
// do); a 'wait' asks again in the next call. With 50 endpoints and BENCH_BATCH=50 each call
// carries one request per endpoint (what the e2e bench's worker mostly sends).
import { execFileSync } from 'node:child_process';
import { cpuUsage } from 'node:process';
import type { Redis } from 'ioredis';
import { loadConfig } from '../../core/config/load';
import { keys } from '../../core/domain/keys';
import { guardParams } from '../../core/pipeline/guard-params';
import type { Admission, AdmitRequest, Completion, GuardParams } from '../../core/ports/guards';
import { createRedis } from '../../workers/redis/client';
import { RedisGuards } from '../../workers/redis/guards';
import { freePort } from '../helpers/procs';
import { envPositiveInt } from './bench-env';

const N = envPositiveInt('BENCH_N', 20_000);
const BATCH = envPositiveInt('BENCH_BATCH', 100);
const RUNS = envPositiveInt('BENCH_RUNS', 3);
const ONLY = process.env.BENCH_ONLY ?? '';
const GIVEN_PORT = process.env.BENCH_REDIS_PORT;
const SPLIT = process.env.BENCH_SPLIT !== '0';

type Scenario = { name: string; endpoints: number; hostCeiling: number };
const SCENARIOS: Scenario[] = [
  { name: 'one endpoint', endpoints: 1, hostCeiling: 0 },
  { name: '50 endpoints', endpoints: 50, hostCeiling: 0 },
  { name: '50 endpoints, host limit 200', endpoints: 50, hostCeiling: 200 },
];

const cpuUs = async (r: Redis) => {
  const cpu = await r.info('cpu');
  const num = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(cpu)![1]);
  return (num('used_cpu_user') + num('used_cpu_sys')) * 1e6;
};

/** Commands Redis ran, less the script calls themselves and INFO: the scripts' redis.call()s. */
const innerCalls = async (r: Redis) => {
  const stats = await r.info('commandstats');
  let calls = 0;
  for (const m of stats.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) if (!['evalsha', 'eval', 'info', 'script'].includes(m[1]!)) calls += Number(m[2]);
  return calls;
};

const info = async (r: Redis) => {
  const cpu = await cpuUs(r);
  const calls = await innerCalls(r);
  const net = await r.info('stats');
  // Bytes Redis received: what the client sent (the script calls' keys and arguments).
  const inBytes = Number(/total_net_input_bytes:(\d+)/.exec(net)![1]);
  return { cpuUs: cpu, calls, inBytes };
};

type Driven = Pick<RedisGuards, 'admit' | 'complete'>;
type Split = { admitCalls: number; admitUs: number; completeCalls: number; completeUs: number };

/** The guards, with the commands and CPU of each script call added to `t`. */
const splitting = (g: RedisGuards, r: Redis, t: Split): Driven => {
  const around = async <T>(run: () => Promise<T>, add: (calls: number, us: number) => void): Promise<T> => {
    const c0 = await innerCalls(r);
    const u0 = await cpuUs(r);
    const out = await run();
    const u1 = await cpuUs(r);
    add((await innerCalls(r)) - c0, u1 - u0);
    return out;
  };
  return {
    admit: (reqs, p) =>
      around(
        () => g.admit(reqs, p),
        (c, u) => ((t.admitCalls += c), (t.admitUs += u)),
      ),
    complete: (done, p) =>
      around(
        () => g.complete(done, p),
        (c, u) => ((t.completeCalls += c), (t.completeUs += u)),
      ),
  };
};

type Ask = { req: AdmitRequest; ep: number };

/** Delivers N webhooks through admit → complete; returns the admissions asked. */
const drive = async (g: Driven, p: GuardParams, s: Scenario, tag: string): Promise<number> => {
  const hashes = Array.from({ length: s.endpoints }, (_, i) => `${tag}ep${String(i).padStart(3, '0')}0123456789abcdef`);
  const waiting: Ask[] = [];
  const cap = hashes.map(() => p.limits.initial);
  let next = 0;
  let delivered = 0;
  let asked = 0;
  let pending: Completion[] = [];
  while (delivered < N) {
    if (pending.length) {
      await g.complete(pending, p);
      delivered += pending.length;
    }
    const perEp = hashes.map(() => 0);
    const batch: Ask[] = [];
    const take = (a: Ask) => {
      perEp[a.ep]!++;
      batch.push(a);
    };
    while (waiting.length && batch.length < BATCH) take(waiting.shift()!);
    for (let tries = 0; next < N && batch.length < BATCH && tries < BATCH * 2; tries++) {
      const ep = next % s.endpoints;
      if (perEp[ep]! >= cap[ep]!) break;
      take({ ep, req: { endpointHash: hashes[ep]!, host: 'api.example.com', configId: `cfg_${ep}`, lane: 'fast', now: 0, id: `wh_${tag}_${next++}` } });
    }
    for (const a of batch) a.req.now = Date.now();
    asked += batch.length;
    const got: Admission[] = batch.length
      ? await g.admit(
          batch.map((a) => a.req),
          p,
        )
      : [];
    pending = [];
    got.forEach((a, i) => {
      const { req, ep } = batch[i]!;
      if (a.kind === 'go') {
        if (a.seen) cap[ep] = a.seen.fastLimit;
        const ms = 5 + ((i * 7) % 15);
        pending.push({
          endpointHash: req.endpointHash,
          host: req.host,
          id: req.id,
          now: Date.now(),
          outcome: 'success',
          probe: a.probe,
          counted: a.counted,
          sample: { ms, drop: false, timeout: false },
        });
      } else if (a.kind === 'wait') waiting.push({ ep, req: { ...req, waited: true } });
      else throw new Error(`unexpected admission ${a.kind}`);
    });
  }
  return asked;
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const main = async () => {
  const port = GIVEN_PORT ? Number(GIVEN_PORT) : await freePort();
  if (!GIVEN_PORT) execFileSync('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'yes']);
  const redis = createRedis(`redis://127.0.0.1:${port}`);
  try {
    await redis.set(keys.canary(), 'bench');
    const g = new RedisGuards(redis);
    console.log(`guard scripts: ${N} webhooks per run, calls of up to ${BATCH}, median of ${RUNS} runs`);
    for (const s of SCENARIOS.filter((x) => (ONLY.endsWith('$') ? x.name === ONLY.slice(0, -1) : x.name.startsWith(ONLY)))) {
      const config = loadConfig();
      const p = guardParams({ ...config, concurrency: { ...config.concurrency, max_inflight_per_domain: s.hostCeiling } });
      await drive(g, p, s, 'warm'); // scripts loaded, allocator warm
      const redisUs: number[] = [];
      const nodeUs: number[] = [];
      const calls: number[] = [];
      const sent: number[] = [];
      let asked = 0;
      for (let r = 0; r < RUNS; r++) {
        const before = await info(redis);
        const c0 = cpuUsage();
        asked = await drive(g, p, s, `r${r}`);
        const c = cpuUsage(c0);
        const after = await info(redis);
        redisUs.push((after.cpuUs - before.cpuUs) / N);
        nodeUs.push((c.user + c.system) / N);
        calls.push((after.calls - before.calls) / N);
        sent.push((after.inBytes - before.inBytes) / N);
      }
      console.log(
        `${s.name.padEnd(30)} redis ${median(redisUs).toFixed(1)} us/webhook [${redisUs.map((x) => x.toFixed(1)).join(' ')}]  ` +
          `node ${median(nodeUs).toFixed(1)} us/webhook  redis.call ${median(calls).toFixed(2)}/webhook  sent ${median(sent).toFixed(0)} B/webhook  admissions ${(asked / N).toFixed(2)}/webhook`,
      );
      if (!SPLIT) continue;
      const t: Split = { admitCalls: 0, admitUs: 0, completeCalls: 0, completeUs: 0 };
      await drive(splitting(g, redis, t), p, s, 'split');
      const per = (x: number) => (x / N).toFixed(2);
      console.log(
        `${''.padEnd(30)} admitDelivery redis.call ${per(t.admitCalls)}/webhook (~${per(t.admitUs)} us)  completeDelivery redis.call ${per(t.completeCalls)}/webhook (~${per(t.completeUs)} us)`,
      );
    }
  } finally {
    redis.on('error', () => {});
    if (!GIVEN_PORT) await redis.shutdown('NOSAVE').catch(() => {});
    redis.disconnect();
  }
};

void main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
