import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { endpointHash } from '../../core/domain/ids';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startFleetAndReceiver, type Cleanups } from '../helpers/fleet-receiver';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Protection (docs/ARCHITECTURE.md) on real Kafka + Redis: a slow neighbour does not slow the
// fast lane, hosts keep their in-flight limits, and paused endpoints lose nothing.

const latencies = (rx: Receiver, sentAt: Map<string, number>) => rx.received.map((r) => r.at - sentAt.get(String(r.headers['webhook-id']))!).sort((a, b) => a - b);
const p99 = (xs: number[]) => xs[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]!;

describe('protection (kafka + redis)', () => {
  const cleanups: Cleanups = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });
  afterAll(async () => {
    for (const c of cleanups.splice(0)) await c();
  });

  const enqueueBatch = async (f: TestFleet, config: string, endpoint: string, n: number, sentAt: Map<string, number>, offset = 0) => {
    const t = Date.now();
    const res = await f.post(`/webhooks/${config}/enqueue/batch`, { webhooks: Array.from({ length: n }, (_, i) => ({ endpoint, payload: { i: i + offset } })) });
    expect(res.status).toBe(202);
    for (const r of ((await res.json()) as any).results) sentAt.set(r.webhook_id, t);
  };

  it('slow neighbour: S (2 s answers) goes through howk.slow and is all delivered; F keeps its latency', async () => {
    const fast = await startReceiver(() => ({ status: 200 }));
    const slow = await startReceiver(() => ({ status: 200, delayMs: 2000 }));
    const f = await startTestFleet('kafka', { overrides: { 'concurrency.max_inflight_per_endpoint': 5, 'concurrency.slow_lane_rate': 100, 'delivery.max_conns_per_host': 200 } });
    cleanups.push(
      () => f.stop(),
      () => fast.close(),
      () => slow.close(),
    );
    const sentAt = new Map<string, number>();
    // Warm up (consumer group joins), then the baseline: F alone, 500 webhooks over 50 configs.
    await enqueueBatch(f, 'warm', fast.url('/warm'), 1, sentAt);
    await waitFor(() => fast.received.length >= 1, { what: 'warm-up delivery' });
    fast.received.length = 0;
    for (let b = 0; b < 50; b++) await enqueueBatch(f, `f-${b}`, fast.url('/f'), 10, sentAt, b * 10);
    await waitFor(() => fast.received.length >= 500, { what: 'baseline F deliveries' });
    const base = p99(latencies(fast, sentAt));
    fast.received.length = 0;
    // With S: the same load for F, interleaved with 500 webhooks for S. Per-config order
    // makes one config's deliveries to a 2 s endpoint serial, so S is spread over 50 configs too.
    for (let b = 0; b < 50; b++) {
      await enqueueBatch(f, `s-${b}`, slow.url('/s'), 10, sentAt, b * 10);
      await enqueueBatch(f, `f-${b}`, fast.url('/f'), 10, sentAt, b * 10);
    }
    await waitFor(() => fast.received.length >= 500, { what: 'F deliveries next to S' });
    const withS = p99(latencies(fast, sentAt));
    console.log(`slow neighbour: F p99 alone ${base} ms, next to S ${withS} ms`);
    // 2x, with a 100 ms floor so that a tiny baseline does not turn scheduling noise into a failure.
    expect(withS).toBeLessThanOrEqual(Math.max(2 * base, base + 100));
    await waitFor(() => new Set(slow.received.map((r) => r.headers['webhook-id'])).size >= 500, { timeoutMs: 90_000, what: 'all S deliveries' });
    const diverted = f.records('slow').length;
    expect(diverted).toBeGreaterThanOrEqual(400);
    console.log(`slow neighbour: ${diverted} of S's 500 webhooks went through howk.slow`);
  });

  it("domain limit: two endpoints on one host never exceed the host's in-flight limit together", async () => {
    const { rx, f } = await startFleetAndReceiver(cleanups, () => ({ status: 200, delayMs: 100 }), {
      overrides: { 'concurrency.domain_overrides': { '127.0.0.1': 3 }, 'concurrency.slow_lane_rate': 200 },
    });
    const sentAt = new Map<string, number>();
    for (let b = 0; b < 6; b++) await enqueueBatch(f, `d-${b}`, rx.url(b % 2 ? '/one' : '/two'), 10, sentAt);
    await waitFor(() => new Set(rx.received.map((r) => r.headers['webhook-id'])).size >= 60, { timeoutMs: 60_000, what: '60 deliveries' });
    expect(rx.maxInflight()).toBeLessThanOrEqual(3);
    expect(rx.maxInflight()).toBeGreaterThanOrEqual(2);
  });

  it('pause: 200 webhooks to a paused endpoint are all delivered, in order per config, after resume', async () => {
    const { rx, f } = await startFleetAndReceiver(cleanups, () => ({ status: 200 }));
    const endpoint = rx.url('/paused');
    const hash = await endpointHash(endpoint);
    expect((await f.post(`/endpoints/${hash}/pause`, {})).status).toBe(200);
    const sentAt = new Map<string, number>();
    for (let b = 0; b < 4; b++) await enqueueBatch(f, 'ordered', endpoint, 50, sentAt, b * 50);
    const view = await waitFor(
      async () => {
        const v = (await (await fetch(`${f.baseUrl}/endpoints/${hash}`)).json()) as any;
        return v.parked_while_paused === 200 ? v : undefined;
      },
      { what: '200 webhooks held' },
    );
    expect(view.paused).toBe(true);
    expect(rx.received).toHaveLength(0);
    const res = (await (await f.post(`/endpoints/${hash}/resume`, {})).json()) as any;
    expect(res.released).toBe(200);
    await waitFor(() => rx.received.length >= 200, { what: 'drained deliveries' });
    expect(rx.received.map((r) => JSON.parse(r.body.toString()).i)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(((await (await fetch(`${f.baseUrl}/endpoints/${hash}`)).json()) as any).paused).toBe(false);
  });

  it('pause of a config holds all its endpoints, others flow', async () => {
    const { rx, f } = await startFleetAndReceiver(cleanups, () => ({ status: 200 }));
    expect((await f.post('/configs/tenant-p/pause', {})).status).toBe(200);
    const sentAt = new Map<string, number>();
    await enqueueBatch(f, 'tenant-p', rx.url('/p1'), 10, sentAt);
    const held = [...sentAt.keys()];
    await enqueueBatch(f, 'tenant-q', rx.url('/q1'), 10, sentAt);
    await waitFor(() => rx.received.filter((r) => r.path === '/q1').length >= 10, { what: 'other config flows' });
    // Batches are pipelined: q's may be delivered before p's batch has finished holding its webhooks.
    const heldState = async (id: string) => ((await (await fetch(`${f.baseUrl}/webhooks/${id}/status`)).json()) as any).held;
    await waitFor(async () => (await Promise.all(held.map(heldState))).every((h) => h === 'paused'), { what: 'every webhook of the paused config held' });
    expect(rx.received.filter((r) => r.path === '/p1')).toHaveLength(0);
    expect(((await (await f.post('/configs/tenant-p/resume', {})).json()) as any).released).toBe(10);
    await waitFor(() => rx.received.filter((r) => r.path === '/p1').length >= 10, { what: 'paused config drained' });
  });
});
