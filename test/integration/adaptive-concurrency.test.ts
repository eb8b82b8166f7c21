import { afterEach, describe, expect, it } from 'vitest';
import { endpointHash } from '../../core/domain/ids';
import type { ConcurrencyView } from '../../core/ports/guards';
import { waitFor } from '../helpers/env';
import type { TestFleet } from '../helpers/fleet';
import { startFleetAndReceiver, type Cleanups } from '../helpers/fleet-receiver';
import type { Receiver } from '../helpers/receiver';

// The adaptive per-endpoint limit and the lane rule on real Kafka + Redis with a running
// worker: a busy endpoint is not a slow endpoint (never diverted), a slow one is (and still
// gets everything), and a limit follows the endpoint's latency (GET /endpoints/:hash).

const ids = (rx: Receiver) => new Set(rx.received.map((r) => String(r.headers['webhook-id'])));

describe('adaptive concurrency (kafka + redis)', () => {
  const cleanups: Cleanups = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** `configs` × `per` webhooks to one endpoint, one batch enqueue per config. */
  const enqueue = async (f: TestFleet, endpoint: string, configs: number, per: number, tag: string) => {
    for (let c = 0; c < configs; c++) {
      const res = await f.post(`/webhooks/${tag}-${c}/enqueue/batch`, { webhooks: Array.from({ length: per }, (_, i) => ({ endpoint, payload: { c, i } })) });
      expect(res.status).toBe(202);
    }
  };
  const view = async (f: TestFleet, hash: string): Promise<ConcurrencyView> =>
    ((await (await fetch(`${f.baseUrl}/endpoints/${hash}`)).json()) as { concurrency: ConcurrencyView }).concurrency;

  it('delivers 5,000 webhooks to one fast endpoint with none diverted to the slow lane', async () => {
    const { rx, f } = await startFleetAndReceiver(cleanups, () => ({ status: 200 }));
    const endpoint = rx.url('/busy');
    await enqueue(f, endpoint, 50, 100, 'busy');
    // Bounded waits for the outcome, not a speed: on a loaded 2-core machine the 5,000 took more
    // than the project's 120 s test timeout (speed is measured by `npm run bench`).
    await waitFor(() => ids(rx).size >= 5000, { timeoutMs: 240_000, intervalMs: 200, what: '5,000 deliveries' });
    await waitFor(() => f.records('results').length >= 5000, { timeoutMs: 60_000, what: '5,000 results' });
    expect(f.records('slow')).toHaveLength(0);
    const v = await view(f, await endpointHash(endpoint));
    expect(v).toMatchObject({ slow: false, slow_reason: null });
    console.log(`busy endpoint: limit ${v.limit}, latency p50 ${v.latency_ms.p50} ms p90 ${v.latency_ms.p90} ms, receiver peak in flight ${rx.maxInflight()}`);
  }, 330_000);

  it('diverts an endpoint answering after 500 ms (slow_threshold 200 ms) and still delivers every webhook', async () => {
    const { rx, f } = await startFleetAndReceiver(cleanups, () => ({ status: 200, delayMs: 500 }), {
      overrides: { 'concurrency.slow_threshold': 200, 'concurrency.max_inflight_per_endpoint': 4 },
    });
    const endpoint = rx.url('/slow');
    await enqueue(f, endpoint, 20, 10, 'slow');
    await waitFor(() => ids(rx).size >= 200, { timeoutMs: 90_000, intervalMs: 200, what: 'all 200 deliveries' });
    const v = await view(f, await endpointHash(endpoint));
    expect(v).toMatchObject({ slow: true, slow_reason: 'latency' });
    expect(v.latency_ms.p50).toBeGreaterThanOrEqual(500);
    const diverted = new Set(f.records('slow').map((r) => JSON.parse(r.value ?? '{}').id)).size;
    expect(diverted).toBeGreaterThan(0);
    console.log(`slow endpoint: ${diverted} of 200 webhooks went through howk.slow; limit ${v.limit}`);
  });

  it('lowers the limit of an endpoint whose latency rises, visible in GET /endpoints/:hash', async () => {
    let delayMs = 0;
    const { rx, f } = await startFleetAndReceiver(cleanups, () => ({ status: 200, delayMs }));
    const endpoint = rx.url('/rising');
    const hash = await endpointHash(endpoint);
    await enqueue(f, endpoint, 30, 10, 'fast');
    await waitFor(() => ids(rx).size >= 300, { timeoutMs: 60_000, what: 'the fast phase' });
    const before = await waitFor(
      async () => {
        const v = await view(f, hash);
        return v.inflight === 0 && v.latency_ms.samples > 0 ? v : undefined;
      },
      { what: 'the fast phase measured' },
    );
    delayMs = 500;
    await enqueue(f, endpoint, 30, 10, 'rising');
    const after = await waitFor(
      async () => {
        const v = await view(f, hash);
        return v.limit < before.limit && v.limit <= 6 ? v : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100, what: 'the limit lowered' },
    );
    expect(after.latency_ms.estimate).toBeGreaterThan(100);
    expect(after.slow).toBe(false); // 500 ms is below the 1 s threshold: it waits its turn in the fast lane
    console.log(`rising latency: limit ${before.limit} → ${after.limit} (latency estimate ${after.latency_ms.estimate?.toFixed(1)} ms)`);
    await waitFor(() => ids(rx).size >= 600, { timeoutMs: 90_000, intervalMs: 200, what: 'every webhook of the slow phase' });
    expect(f.records('slow')).toHaveLength(0);
    // Its own waits (60 + 60 + 90 s at most) bound it, not the project's 120 s.
  }, 300_000);
});
