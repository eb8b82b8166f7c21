// Slow-neighbour benchmark (docs/BENCHMARKS.md): endpoint S answers after 2 s, endpoint F at once.
// Measures F's enqueue→receipt latency alone and next to S, and how S's traffic fares,
// on real Kafka + Redis with an in-process fleet (api + worker + scheduler).
//   KAFKA_BROKERS=127.0.0.1:19092 REDIS_URL=redis://127.0.0.1:16379 npx tsx test/bench/slow-neighbour.bench.ts
// or `npm run bench:slow` (starts Kafka and Redis itself). Knobs: BENCH_N (per endpoint, 500).
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { waitFor } from '../helpers/env';

const N = Number(process.env.BENCH_N ?? 500);
const CONFIGS = 50;

const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;
const latencies = (rx: Receiver, sentAt: Map<string, number>) => {
  const first = new Map<string, number>();
  for (const r of rx.received) {
    const id = String(r.headers['webhook-id']);
    if (!first.has(id)) first.set(id, r.at);
  }
  return [...first].map(([id, at]) => at - sentAt.get(id)!).sort((a, b) => a - b);
};

const enqueue = async (f: TestFleet, config: string, endpoint: string, n: number, sentAt: Map<string, number>) => {
  const t = Date.now();
  const res = await f.post(`/webhooks/${config}/enqueue/batch`, { webhooks: Array.from({ length: n }, (_, i) => ({ endpoint, payload: { i } })) });
  if (res.status !== 202) throw new Error(`enqueue answered ${res.status}`);
  for (const r of ((await res.json()) as any).results) sentAt.set(r.webhook_id, t);
};

const fast = await startReceiver(() => ({ status: 200 }));
const slow = await startReceiver(() => ({ status: 200, delayMs: 2000 }));
const f = await startTestFleet('kafka', {
  redisDb: 9,
  overrides: { 'concurrency.max_inflight_per_endpoint': 10, 'concurrency.slow_lane_rate': 100, 'delivery.max_conns_per_host': 200 },
});
try {
  const sentAt = new Map<string, number>();
  await enqueue(f, 'warm', fast.url('/warm'), 1, sentAt);
  await waitFor(() => fast.received.length >= 1, { what: 'warm-up' });
  fast.received.length = 0;
  const per = Math.ceil(N / CONFIGS);
  for (let c = 0; c < CONFIGS; c++) await enqueue(f, `f-${c}`, fast.url('/f'), per, sentAt);
  await waitFor(() => new Set(fast.received.map((r) => r.headers['webhook-id'])).size >= per * CONFIGS, { timeoutMs: 120_000, what: 'F alone' });
  const alone = latencies(fast, sentAt);
  fast.received.length = 0;
  const t0 = Date.now();
  for (let c = 0; c < CONFIGS; c++) {
    await enqueue(f, `s-${c}`, slow.url('/s'), per, sentAt);
    await enqueue(f, `f-${c}`, fast.url('/f'), per, sentAt);
  }
  await waitFor(() => new Set(fast.received.map((r) => r.headers['webhook-id'])).size >= per * CONFIGS, { timeoutMs: 120_000, what: 'F next to S' });
  const withS = latencies(fast, sentAt);
  await waitFor(() => new Set(slow.received.map((r) => r.headers['webhook-id'])).size >= per * CONFIGS, { timeoutMs: 300_000, what: 'all of S' });
  const sDone = (Date.now() - t0) / 1000;
  const sLat = latencies(slow, sentAt);
  const row = (name: string, xs: number[]) => `| ${name} | ${xs.length} | ${pct(xs, 0.5)} | ${pct(xs, 0.99)} | ${xs[xs.length - 1]} |`;
  console.log(
    ['| traffic | webhooks | p50 ms | p99 ms | max ms |', '|---|---|---|---|---|', row('F alone', alone), row('F next to S', withS), row('S (2 s answers)', sLat)].join('\n'),
  );
  console.log(
    `S: ${per * CONFIGS} delivered in ${sDone.toFixed(1)} s; ${f.records('slow').length} records went through howk.slow; duplicates at S: ${slow.received.length - per * CONFIGS}`,
  );
  console.log(`F p99 next to S / alone: ${(pct(withS, 0.99) / pct(alone, 0.99)).toFixed(2)}x`);
} finally {
  await f.stop();
  await fast.close();
  await slow.close();
}
process.exit(0);
