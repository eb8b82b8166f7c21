// CPU of the api's own part of an enqueue, in process: the Hono app (middleware, routing),
// body parse and validation, webhook building, record encoding, the 'pending' statuses and
// the response, with a producer and a hot state that answer at once (no Kafka, no Redis, no
// sockets). Compare two versions by alternating runs (A B A B); the api-enqueue bench
// measures the whole howk-api process.
//
//   npx tsx test/bench/enqueue-path.bench.ts     (PATH_MODE batch | single, PATH_N 50000, PATH_ROUNDS 7)
import { loadConfig } from '../../core/config/load';
import { createApiApp } from '../../core/http/app';
import { createEnqueuer } from '../../core/pipeline/enqueue';
import { noEvents } from '../../core/metrics/events';
import { systemClock } from '../../core/ports/clock';
import { silentLogger } from '../../core/ports/logger';
import type { HotBatch } from '../../core/ports/hot-state';
import type { LogProducer } from '../../core/ports/log';

const MODE = process.env.PATH_MODE === 'single' ? 'single' : 'batch';
const N = Number(process.env.PATH_N ?? 50_000);
const ROUNDS = Number(process.env.PATH_ROUNDS ?? 7);
const BATCH = MODE === 'single' ? 1 : 100;
const CONFIGS = 50;

const config = loadConfig({ env: {}, overrides: { 'api.auth.enabled': false } });
let produced = 0;
const producer: LogProducer = {
  send: async (records) => {
    produced += records.length;
  },
  close: async () => {},
};
let statuses = 0;
const hot = {
  apply: async (b: HotBatch) => void (statuses += b.statuses?.length ?? 0),
  claimIdempotency: async () => [],
  releaseIdempotency: async () => {},
  commitIdempotency: async () => {},
  getStatus: async () => null,
  stats: async () => ({}),
};
const enqueue = createEnqueuer({ config, producer, hot: hot as never, clock: systemClock, log: silentLogger, events: noEvents });
const app = createApiApp({ config, enqueue, hot: hot as never, log: silentLogger, dependencies: [], clock: systemClock, events: noEvents });

const pad = 'x'.repeat(136);
const payloadOf = (seq: number) => `{"type":"bench.event","seq":${seq},"data":{"user":"u_${seq % 9973}","amount":${seq % 100_000},"currency":"EUR","note":"${pad}"}}`;
const bodies = Array.from({ length: CONFIGS }, (_, c) => {
  const endpoint = `http://127.0.0.1:9/cfg-${c}`;
  const items = Array.from({ length: BATCH }, (_, i) => `{"endpoint":${JSON.stringify(endpoint)},"payload":${payloadOf(c * BATCH + i)}}`);
  return MODE === 'single' ? items[0]! : `{"webhooks":[${items.join(',')}]}`;
});
const path = (c: number) => `/webhooks/cfg-${c}/enqueue${MODE === 'single' ? '' : '/batch'}`;

const round = async (n: number): Promise<number> => {
  const t = process.cpuUsage();
  for (let i = 0; i < n / BATCH; i++) {
    const c = i % CONFIGS;
    const res = await app.request(path(c), {
      method: 'POST',
      body: bodies[c]!,
      headers: { 'content-type': 'application/json', 'content-length': String(bodies[c]!.length) },
    });
    if (res.status !== 202) throw new Error(`${res.status}: ${await res.text()}`);
    await res.text();
  }
  const u = process.cpuUsage(t);
  return (u.user + u.system) / 1000;
};

// Warm until the JIT has settled: the first rounds of a fresh process cost more.
await round(N);
await round(N);
const figures: number[] = [];
for (let r = 0; r < ROUNDS; r++) figures.push((await round(N)) / (N / 1000));
const median = [...figures].sort((a, b) => a - b)[Math.floor(figures.length / 2)]!;
console.log(`enqueue path (${MODE}): ms CPU per 1,000 webhooks: median ${median.toFixed(2)} of ${figures.map((f) => f.toFixed(2)).join(' ')}  (${produced} produced)`);
