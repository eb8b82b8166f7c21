// CPU of the delivery engine alone (core/pipeline: decode, admission, signing, attempt,
// outcome records, handoff), per 1,000 webhooks: the worker's part of a delivery without
// Kafka, Redis or HTTP. Guards, hot state, producer and sender are stubs that answer at
// once, so what is measured is the engine's own work; compare two versions of it by
// alternating runs (A B A B). The e2e bench (test/bench/e2e.bench.ts) measures the whole
// worker process; on a busy machine its CPU per webhook follows the throughput of the run.
//
//   npx tsx test/bench/engine.bench.ts            (ENGINE_N webhooks per round, 20000)
import { loadConfig } from '../../core/config/load';
import { encodeWebhook, type Webhook } from '../../core/records/webhook';
import { createDeliverer } from '../../core/pipeline/deliver';
import { silentLogger } from '../../core/ports/logger';
import { systemClock } from '../../core/ports/clock';
import type { Admission, Guards } from '../../core/ports/guards';
import type { HotState } from '../../core/ports/hot-state';
import type { ConsumedBatch, LogProducer } from '../../core/ports/log';
import type { DeliveryResponse, Sender } from '../../core/ports/sender';
import { nodeHmacSha256 } from '../../workers/node/hmac';
import { createStageRecorder } from '../../core/metrics/recorder';
import { registerPipelineMetrics } from '../../workers/node/pipeline-metrics';
import { Registry } from 'prom-client';

const N = Number(process.env.ENGINE_N ?? 20_000);
const ROUNDS = Number(process.env.ENGINE_ROUNDS ?? 5);
const CONFIGS = 50;
const BATCH = 100;

const config = loadConfig({ env: {}, overrides: { 'signing.default_secret': 'bench-secret-0123456789' } });
const topic = config.kafka.topics.pending;

const go: Admission = { kind: 'go', probe: false, counted: { endpoint: true, domain: false }, seen: { fastLimit: 64, limit: 64, latencyMs: 1 } };
const guards = {
  admit: async (reqs: unknown[]) => reqs.map(() => go),
  complete: async () => [],
  renew: async () => {},
} as unknown as Guards;
const hot = { apply: async () => {}, ackRetries: async () => {} } as unknown as HotState;
let produced = 0;
const producer: LogProducer = {
  send: async (records) => void (produced += records.length),
  close: async () => {},
};
const sender: Sender = {
  send: async (): Promise<DeliveryResponse> => ({ kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 }),
  close: async () => {},
};

const payload = JSON.stringify({ type: 'order.created', data: { id: 'ord_0123456789', amount: 4200, currency: 'EUR', note: 'x'.repeat(120) } });
const record = (i: number, offset: number) => {
  const cfg = `cfg_${i % CONFIGS}`;
  const w: Webhook = {
    id: `wh_${offset}`,
    config_id: cfg,
    endpoint: `http://127.0.0.1:9/hook/${cfg}`,
    endpoint_hash: cfg.padEnd(32, '0'),
    payload,
    headers: {},
    attempt: 0,
    max_attempts: 5,
    deferrals: 0,
    created_at: new Date().toISOString(),
    scheduled_at: new Date().toISOString(),
  };
  return { topic, partition: 0, offset: String(offset), key: cfg, value: encodeWebhook(w), timestamp: Date.now() };
};

// As howk-worker runs it (workers/node/fleet.ts): stage times, pipeline events and per-config
// secrets (none set here, so the default secret signs) are recorded and looked up per delivery.
const deliver = createDeliverer({
  config,
  hot,
  producer,
  clock: systemClock,
  log: silentLogger,
  sender,
  guards,
  hmac: nodeHmacSha256,
  configSecrets: async () => [],
  stages: createStageRecorder().recorder,
  events: registerPipelineMetrics(new Registry(), 10).events,
});

let offset = 0;
const run = async (n: number) => {
  for (let done = 0; done < n; done += BATCH) {
    const records = Array.from({ length: BATCH }, (_, i) => record(i, offset++));
    const batch: ConsumedBatch = { topic, partition: 0, records };
    await deliver(batch);
  }
};

await run(2000); // warm-up (JIT)
const results: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const t = process.cpuUsage();
  await run(N);
  const u = process.cpuUsage(t);
  results.push((u.user + u.system) / 1000 / (N / 1000));
}
results.sort((a, b) => a - b);
console.log(
  `engine CPU per 1,000 webhooks: median ${results[Math.floor(results.length / 2)]!.toFixed(1)} ms (rounds: ${results.map((x) => x.toFixed(1)).join(', ')}; ${produced} records produced)`,
);
await deliver.drain();
