import { freePort } from '../helpers/procs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHistograms, type Histogram } from '../../core/metrics/histogram';
import { waitFor } from '../helpers/env';
import { startTestFleet, testConfig, type TestFleet } from '../helpers/fleet';
import { emptyOwnDb } from '../helpers/own-db';
import { useRedisDb } from '../helpers/redis-db';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Delivery stage metrics on real Kafka + Redis: the api and the worker are separate fleets (as
// howk-api and howk-worker are separate processes); the api serves GET /metrics on its API port
// (read scope), the worker on metrics.port. Every delivered webhook shows up once in every stage.

const redisDb = useRedisDb();
const WORKER_STAGES = ['fetched', 'admitted', 'sent', 'responded', 'durable', 'committed'];

const series = (text: string, name: string, label: string): Histogram | undefined => parseHistograms(text, name).get(label);

describe('delivery stage metrics (real Kafka + Redis)', () => {
  let rx: Receiver;
  let api: TestFleet;
  let worker: TestFleet;
  let readKey: string;
  let enqueueKey: string;

  beforeAll(async () => {
    await emptyOwnDb(redisDb());
    rx = await startReceiver();
    const config = testConfig('kafka', { 'api.auth.enabled': true });
    api = await startTestFleet('kafka', { config, redisDb: redisDb(), roles: { api: true, worker: false, scheduler: false } });
    await api.fleet.security!.ready;
    readKey = (await api.fleet.security!.keys!.create({ scopes: ['read', 'enqueue'] })).key;
    enqueueKey = (await api.fleet.security!.keys!.create({ scopes: ['enqueue'] })).key;
    const workerConfig = { ...config, metrics: { ...config.metrics, port: await freePort(), host: '127.0.0.1' } };
    worker = await startTestFleet('kafka', { config: workerConfig, redisDb: redisDb(), roles: { api: false, worker: true, scheduler: true } });
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    await rx?.close();
  });

  const apiMetrics = async (key?: string) => {
    const res = await fetch(`${api.baseUrl}/metrics`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
  };

  it('GET /metrics on the api needs a key with the read scope', async () => {
    expect((await apiMetrics()).status).toBe(401);
    const refused = await apiMetrics(enqueueKey);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.text).error.code).toBeTruthy();
    const ok = await apiMetrics(readKey);
    expect(ok.status).toBe(200);
    expect(ok.type).toMatch(/^text\/plain/);
    expect(ok.text).toContain('# TYPE howk_stage_seconds histogram');
  });

  it('counts every delivered webhook once per stage, on the api and on the worker', async () => {
    const auth = { authorization: `Bearer ${readKey}` };
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await api.post('/webhooks/m1/enqueue', { endpoint: rx.url(`/m/${i}`), payload: { i } }, auth);
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as { webhook_id: string }).webhook_id);
    }
    const batch = await api.post('/webhooks/m2/enqueue/batch', { webhooks: [0, 1].map((i) => ({ endpoint: rx.url(`/b/${i}`), payload: { i } })) }, auth);
    expect(batch.status).toBe(202);
    const n = 5;
    await waitFor(() => rx.byWebhook().size >= n, { what: `${n} deliveries` });

    // The api: one 'produced' observation per webhook, nothing of the worker's stages.
    const a = await apiMetrics(readKey);
    expect(series(a.text, 'howk_stage_seconds', 'stage="produced"')?.count).toBe(n);
    for (const s of WORKER_STAGES) expect(series(a.text, 'howk_stage_seconds', `stage="${s}"`)?.count ?? 0).toBe(0);

    // The worker, on metrics.port: every later stage once per webhook. The last ones end after
    // the receiver has the request (outcome writes, the commit): wait for them.
    const scrape = async () => (await fetch(worker.fleet.metricsUrl!)).text();
    const w = await waitFor(
      async () => {
        const text = await scrape();
        return WORKER_STAGES.every((s) => (series(text, 'howk_stage_seconds', `stage="${s}"`)?.count ?? 0) >= n) ? text : undefined;
      },
      { what: 'every stage on the worker' },
    );
    for (const s of WORKER_STAGES) {
      const h = series(w, 'howk_stage_seconds', `stage="${s}"`);
      expect(h?.count, s).toBe(n);
      expect(h!.sum, s).toBeGreaterThanOrEqual(0);
    }
    const e2e = series(w, 'howk_enqueue_to_delivery_seconds', 'attempt="first"');
    expect(e2e?.count).toBe(n);
    expect(series(w, 'howk_enqueue_to_delivery_seconds', 'attempt="retry"')?.count ?? 0).toBe(0);
    // Enqueue → delivery is at least the worker's part of it, and was not a minute.
    expect(e2e!.sum).toBeGreaterThan(0);
    expect(e2e!.sum / n).toBeLessThan(60);
    expect(series(w, 'howk_stage_seconds', 'stage="produced"')?.count ?? 0).toBe(0);
    expect(w).toContain('process_cpu_seconds_total');
  });
});

describe('delivery stage metrics (howk-dev: in-memory log, one process)', () => {
  it('counts every delivered webhook once per stage on the one /metrics', async () => {
    const rx = await startReceiver();
    const f = await startTestFleet('memory');
    try {
      for (let i = 0; i < 3; i++) expect((await f.post('/webhooks/mem/enqueue', { endpoint: rx.url(`/mem/${i}`), payload: { i } })).status).toBe(202);
      await waitFor(() => rx.byWebhook().size >= 3, { what: '3 deliveries' });
      const all = ['produced', ...WORKER_STAGES];
      const text = await waitFor(
        async () => {
          const t = await (await fetch(`${f.baseUrl}/metrics`)).text();
          return all.every((s) => (series(t, 'howk_stage_seconds', `stage="${s}"`)?.count ?? 0) >= 3) ? t : undefined;
        },
        { what: 'every stage' },
      );
      for (const s of all) expect(series(text, 'howk_stage_seconds', `stage="${s}"`)?.count, s).toBe(3);
      expect(series(text, 'howk_enqueue_to_delivery_seconds', 'attempt="first"')?.count).toBe(3);
    } finally {
      await f.stop();
      await rx.close();
    }
  });
});
