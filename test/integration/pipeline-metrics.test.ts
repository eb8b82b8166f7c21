import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { startTestFleet, testConfig, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// The pipeline's counters after a real run on Kafka + Redis: a delivered, a retried, a
// deferred and a dead-lettered webhook, a duplicate and a rejected enqueue each move their
// counters by exactly what happened; the per-endpoint series stay bounded.

type Sample = { name: string; labels: Record<string, string>; value: number };

const parse = (text: string): Sample[] =>
  text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(l)!;
      const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1]!, x[2]!]));
      return { name: m[1]!, labels, value: Number(m[3]) };
    });

const value = (s: Sample[], name: string, labels: Record<string, string> = {}): number =>
  s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v)).reduce((n, x) => n + x.value, 0);

describe('pipeline metrics (real Kafka + Redis)', () => {
  let rx: Receiver;
  let f: TestFleet;
  const TOP = 2;

  beforeAll(async () => {
    rx = await startReceiver((r, nth) => {
      if (r.path.startsWith('/flaky')) return nth === 1 ? { status: 500 } : { status: 200 };
      if (r.path.startsWith('/busy')) return nth === 1 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 };
      if (r.path.startsWith('/gone')) return { status: 410 };
      if (r.path.startsWith('/down')) return { status: 503 };
      return { status: 200 };
    });
    f = await startTestFleet('kafka', { config: testConfig('kafka', { 'metrics.top_endpoints': TOP, 'circuit_breaker.failure_threshold': 3 }) });
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const scrape = async () => parse((await f.fleet.metrics.exposition()).body);

  it('counts the start-up rebuild of an empty Redis', async () => {
    // The fleet's Redis db is new (flushed): the worker rebuilt it from Kafka before starting.
    expect(value(await scrape(), 'howk_redis_rebuilds_total')).toBe(1);
  });

  it('moves each counter by what happened to each webhook', async () => {
    const before = await scrape();
    const enqueue = (path: string, extra: Record<string, unknown> = {}) => f.post('/webhooks/pm/enqueue', { endpoint: rx.url(path), payload: { path }, ...extra });
    expect((await enqueue('/ok', { idempotency_key: 'k1' })).status).toBe(202);
    expect((await enqueue('/ok', { idempotency_key: 'k1' })).status).toBe(200);
    for (const p of ['/flaky', '/busy', '/gone']) expect((await enqueue(p)).status).toBe(202);
    const bad = await f.post('/webhooks/pm/enqueue', { endpoint: 'not a url', payload: {} });
    expect(bad.status).toBe(400);
    // ok, flaky ×2, busy ×2, gone: six requests reach the receiver.
    await waitFor(() => rx.received.length >= 6, { what: 'six deliveries' });
    const after = await waitFor(
      async () => {
        const s = await scrape();
        return value(s, 'howk_delivered_total') - value(before, 'howk_delivered_total') >= 3 && value(s, 'howk_dead_letters_total') - value(before, 'howk_dead_letters_total') >= 1
          ? s
          : undefined;
      },
      { what: 'outcomes counted' },
    );
    const delta = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels);
    expect(delta('howk_enqueue_requests_total', { outcome: 'accepted' })).toBe(5);
    expect(delta('howk_enqueue_requests_total', { outcome: 'rejected', reason: 'invalid_request' })).toBe(1);
    expect(delta('howk_enqueue_webhooks_total', { outcome: 'accepted' })).toBe(4);
    expect(delta('howk_enqueue_webhooks_total', { outcome: 'duplicate' })).toBe(1);
    expect(delta('howk_delivery_attempts_total', { class: '2xx' })).toBe(3);
    expect(delta('howk_delivery_attempts_total', { class: '5xx' })).toBe(1);
    expect(delta('howk_delivery_attempts_total', { class: '4xx' })).toBe(2);
    expect(delta('howk_delivery_seconds_count', { class: '2xx' })).toBe(3);
    expect(delta('howk_delivered_total')).toBe(3);
    expect(delta('howk_retries_scheduled_total')).toBe(1);
    expect(delta('howk_deferrals_total')).toBe(1);
    expect(delta('howk_dead_letters_total', { reason: 'unrecoverable' })).toBe(1);
    expect(delta('howk_dead_letters_total')).toBe(1);

    // Four endpoints delivered to, two labelled: the others are `other`.
    const circuitLabels = new Set(after.filter((x) => x.name === 'howk_circuit_state').map((x) => x.labels.endpoint));
    expect(circuitLabels.size).toBe(TOP + 1);
    expect(circuitLabels.has('other')).toBe(true);
    expect(value(after, 'howk_circuit_state', { state: 'closed' })).toBe(4);
    // Gauges read from Kafka and Redis at scrape time.
    const lag = after.filter((x) => x.name === 'howk_consumer_lag' && x.labels.topic === f.config.kafka.topics.pending);
    expect(lag.length).toBe(f.config.kafka.partitions);
    expect(after.some((x) => x.name === 'howk_retry_schedule_depth')).toBe(true);
    expect(after.some((x) => x.name === 'howk_slow_lane_depth')).toBe(true);
  });

  it('shows the circuit an endpoint failing opened, under its own label as the busiest endpoint', async () => {
    const before = await scrape();
    // One attempt each: three failures open the circuit (circuit_breaker.failure_threshold).
    for (let i = 0; i < 3; i++) expect((await f.post('/webhooks/pm-down/enqueue', { endpoint: rx.url('/down'), payload: { i }, max_attempts: 1 })).status).toBe(202);
    const after = await waitFor(
      async () => {
        const s = await scrape();
        return value(s, 'howk_circuit_state', { state: 'open' }) >= 1 ? s : undefined;
      },
      { what: 'an open circuit' },
    );
    const open = after.filter((x) => x.name === 'howk_circuit_state' && x.labels.state === 'open' && x.value > 0);
    expect(open).toHaveLength(1);
    expect(open[0]!.labels.endpoint).not.toBe('other');
    expect(open[0]!.value).toBe(1);
    expect(value(after, 'howk_dead_letters_total', { reason: 'exhausted' }) - value(before, 'howk_dead_letters_total', { reason: 'exhausted' })).toBe(3);
    expect(value(after, 'howk_delivery_attempts_total', { class: '5xx' }) - value(before, 'howk_delivery_attempts_total', { class: '5xx' })).toBe(3);
  });

  it('keeps the per-endpoint series bounded with 10,000 endpoints', async () => {
    const endpoints = f.fleet.metrics.pipeline.endpoints;
    for (let i = 0; i < 10_000; i++) endpoints.touch(`h${i}`, true).limit = 10;
    const s = await scrape();
    const labels = (name: string) => new Set(s.filter((x) => x.name === name).map((x) => x.labels.endpoint));
    expect(labels('howk_circuit_state').size).toBe(TOP + 1);
    expect(labels('howk_concurrency_limit').size).toBeLessThanOrEqual(TOP + 1);
    expect(endpoints.size()).toBeLessThanOrEqual(Math.max(4 * TOP, 64));
  });
});
