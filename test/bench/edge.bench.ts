// Edge benchmark: the wrangler-built Worker in Miniflare (workerd) → DomainGate → howk-bridge
// (a process) → real Kafka. It measures what the edge does up to the 202: enqueues/s, the
// produce-batching ratio (records per REST produce), the latency the DomainGate adds, and
// for comparison a direct REST produce of one record per request.
//
//   npm run bench:edge                          # starts Kafka + Redis unless given
//   KAFKA_BROKERS=127.0.0.1:19092 REDIS_URL=redis://127.0.0.1:16379 npx tsx test/bench/edge.bench.ts
//
// Knobs (env): BENCH_N (4000) enqueues per scenario, BENCH_CONCURRENCY (64) requests in
// flight, BENCH_HOSTS (1,20) destination-host counts to run, BENCH_PAYLOAD_BYTES (230),
// BENCH_LONE_N (300) enqueues one at a time (what the gate adds to a lone enqueue).
// Only 127.0.0.1 is used. Results also go to .tmp/bench-edge.json.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { uniq } from '../helpers/env';
import build from '../edge/helpers/build';
import { root } from '../edge/helpers/paths';
import { bridgeAuth, configOf, edgeVars, ensureTopics, fleetEnv, startBridge, startEdge } from '../edge/helpers/stack';

const envInt = (name: string, def: number) => (process.env[name] ? Math.max(1, Math.floor(Number(process.env[name]))) : def);
const N = envInt('BENCH_N', 4000);
const C = envInt('BENCH_CONCURRENCY', 64);
const HOSTS = (process.env.BENCH_HOSTS ?? '1,20')
  .split(',')
  .map(Number)
  .filter((n) => n > 0);
const LONE_N = envInt('BENCH_LONE_N', 300);
const PAYLOAD = 'x'.repeat(Math.max(0, envInt('BENCH_PAYLOAD_BYTES', 230) - 40));

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : NaN;
};

/** Runs `n` calls of `fn` (true = accepted), `c` at a time: latencies (ms) of the accepted ones, refusals, wall time. */
const drive = async (n: number, c: number, fn: (i: number) => Promise<boolean>) => {
  const lat: number[] = [];
  let refused = 0;
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async () => {
      while (next < n) {
        const i = next++;
        const s = performance.now();
        if (await fn(i)) lat.push(performance.now() - s);
        else refused++;
      }
    }),
  );
  return { lat, refused, wallMs: performance.now() - t0 };
};

const main = async () => {
  // The bridge reads the capacity records (the gates' admission) from the real Redis; the
  // benchmark writes nothing there (no circuit is open, so nothing is parked).
  const env = { ...fleetEnv(uniq('bench-edge')), ...(process.env.REDIS_URL ? { HOWK_REDIS_URL: process.env.REDIS_URL } : {}) };
  const topics = configOf(env).kafka.topics;
  await ensureTopics(env);
  build();
  const bridge = await startBridge(env);
  // Admission is unlimited here: the benchmark measures the path, not the slow lane.
  const edge = await startEdge(edgeVars(env, bridge.url, { HOWK_EDGE_ADMISSION_RATE: '0' }));
  const results: Record<string, unknown>[] = [];
  try {
    const enqueue = async (i: number, hosts: number) => {
      const res = await edge.post(`/webhooks/bench-${i % 50}/enqueue`, { endpoint: `http://h${i % hosts}.bench.invalid/hook`, payload: { i, pad: PAYLOAD } });
      await res.arrayBuffer();
      return res.status === 202;
    };
    await drive(500, C, (i) => enqueue(i, 1)); // warm-up: isolates, gates, connections

    // A lone enqueue (one request at a time): what the gate adds when nothing shares its produce.
    {
      const ns = await edge.mf.getDurableObjectNamespace('GATE');
      const g = ns.get(ns.idFromName('h0.bench.invalid'));
      await g.fetch('https://domain-gate.internal/stats/reset', { method: 'POST' });
      const lone = await drive(LONE_N, 1, (i) => enqueue(i, 1));
      const st = (await (await g.fetch('https://domain-gate.internal/stats')).json()) as { added_ms: { p50: number; p99: number }; produce_ms: { p50: number; p99: number } };
      results.push({
        scenario: `lone enqueue (concurrency 1, ${LONE_N})`,
        accepted_per_s: Math.round((lone.lat.length / lone.wallMs) * 1000),
        refused_503: lone.refused,
        client_p50_ms: +pct(lone.lat, 0.5).toFixed(1),
        client_p99_ms: +pct(lone.lat, 0.99).toFixed(1),
        gate_added_p50_ms: st.added_ms.p50,
        gate_added_p99_ms: st.added_ms.p99,
        produce_p50_ms: st.produce_ms.p50,
        produce_p99_ms: st.produce_ms.p99,
      });
    }

    for (const hosts of HOSTS) {
      const ns = await edge.mf.getDurableObjectNamespace('GATE');
      const gates = Array.from({ length: hosts }, (_, h) => ns.get(ns.idFromName(`h${h}.bench.invalid`)));
      await Promise.all(gates.map((g) => g.fetch('https://domain-gate.internal/stats/reset', { method: 'POST' })));
      const before = await bridge.stats();
      const { lat, refused, wallMs } = await drive(N, C, (i) => enqueue(i, hosts));
      const after = await bridge.stats();
      const calls = after.produce_calls - before.produce_calls;
      const records = after.produce_records - before.produce_records;
      const gateStats = (await Promise.all(gates.map(async (g) => (await g.fetch('https://domain-gate.internal/stats')).json()))) as {
        added_ms: { p50: number; p99: number };
        produce_ms: { p50: number; p99: number };
      }[];
      results.push({
        scenario: `edge enqueue, ${hosts} host(s)`,
        accepted_per_s: Math.round((lat.length / wallMs) * 1000),
        refused_503: refused,
        produce_calls: calls,
        records_per_produce: +(records / calls).toFixed(1),
        client_p50_ms: +pct(lat, 0.5).toFixed(1),
        client_p99_ms: +pct(lat, 0.99).toFixed(1),
        gate_added_p50_ms: Math.max(...gateStats.map((g) => g.added_ms.p50)),
        gate_added_p99_ms: Math.max(...gateStats.map((g) => g.added_ms.p99)),
        produce_p50_ms: Math.max(...gateStats.map((g) => g.produce_ms.p50)),
        produce_p99_ms: Math.max(...gateStats.map((g) => g.produce_ms.p99)),
      });
    }

    // Baseline: the same records produced straight to the bridge, one per REST call.
    const value = JSON.stringify({ i: 0, pad: PAYLOAD });
    const direct = await drive(N, C, async (i) => {
      const res = await fetch(`${bridge.url}/kafka/produce`, {
        method: 'POST',
        headers: { authorization: bridgeAuth, 'content-type': 'application/json' },
        body: JSON.stringify({ topic: topics.pending, key: `bench-${i % 50}`, value }),
      });
      await res.arrayBuffer();
      return res.ok;
    });
    results.push({
      scenario: 'direct REST produce (no edge), 1 record per call',
      accepted_per_s: Math.round((direct.lat.length / direct.wallMs) * 1000),
      refused_503: direct.refused,
      produce_calls: N,
      records_per_produce: 1,
      client_p50_ms: +pct(direct.lat, 0.5).toFixed(1),
      client_p99_ms: +pct(direct.lat, 0.99).toFixed(1),
    });
  } finally {
    await edge.stop();
    await bridge.stop();
  }
  console.log(
    `\nedge benchmark: N=${N} per scenario, concurrency ${C}, payload ~${PAYLOAD.length + 40} B, Miniflare ${JSON.parse(readFileSync(join(root, 'node_modules', 'miniflare', 'package.json'), 'utf8')).version}`,
  );
  console.table(results);
  writeFileSync(join(root, '.tmp', 'bench-edge.json'), JSON.stringify({ at: new Date().toISOString(), n: N, concurrency: C, results }, null, 2));
};

await main();
