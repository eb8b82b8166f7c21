import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import type { Mode, TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Backpressure at the door: api.max_inflight_requests (503, nothing recorded) and
// api.max_outstanding_per_config (429 naming the config, accepted again once deliveries end).

/** A config whose own bound (api.outstanding_overrides) is off. */
const UNBOUNDED = uniq('unbounded');

export const BACKPRESSURE_OVERRIDES = {
  'api.max_inflight_requests': 2,
  'api.max_outstanding_per_config': 3,
  'api.outstanding_overrides': { [UNBOUNDED]: 0 },
  'api.sync_max_wait': '5s',
};

export const backpressureSuite = (mode: Mode, start: () => Promise<TestFleet>) =>
  describe(`backpressure at the door (${mode})`, () => {
    let f: TestFleet;
    let rx: Receiver;
    beforeAll(async () => {
      rx = await startReceiver((r) => (r.path.startsWith('/sleep') ? { status: 200, delayMs: Number(r.path.split('/')[2]) } : { status: 200 }));
      f = await start();
      const first = await f.post(`/webhooks/${uniq('warm')}/enqueue`, { endpoint: rx.url('/ok'), payload: {} });
      const { webhook_id } = (await first.json()) as { webhook_id: string };
      await waitFor(() => rx.byWebhook().get(webhook_id), { what: 'the first delivery', timeoutMs: 60_000 });
    }, 120_000);
    afterAll(async () => {
      await f?.stop();
      await rx?.close();
    });

    const enqueue = (config: string, path: string, wait?: string) =>
      f.post(`/webhooks/${config}/enqueue${wait ? `?wait=${wait}` : ''}`, { endpoint: rx.url(path), payload: { n: 1 } });
    const ofConfig = (config: string) => f.records('pending').filter((r) => r.key === config);

    it('past api.max_inflight_requests: 503 with Retry-After and a JSON error, nothing enqueued; health still answers', async () => {
      const [a, b, c] = [uniq('cfgA'), uniq('cfgB'), uniq('cfgC')];
      // Two requests in hand: each waits for a delivery the receiver holds 2.5 s.
      const held = [enqueue(a, '/sleep/2500', '5s'), enqueue(b, '/sleep/2500', '5s')];
      await waitFor(() => rx.received.filter((r) => r.path === '/sleep/2500').length >= 2 || null, { what: 'both held deliveries' });
      const res = await enqueue(c, '/ok');
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(((await res.json()) as any).error).toMatchObject({ code: 'overloaded', message: expect.stringContaining('api.max_inflight_requests') });
      expect((await fetch(`${f.baseUrl}/health`)).status).toBe(200);
      expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
      // Nothing of the refused request was recorded; once the others are answered it is accepted.
      expect(ofConfig(c)).toHaveLength(0);
      const again = await enqueue(c, '/ok');
      expect(again.status).toBe(202);
      await waitFor(() => ofConfig(c).length === 1 || null, { what: 'the accepted record' });
    }, 30_000);

    it('past api.max_outstanding_per_config: 429 naming the config, visible in its status and the metrics; accepted again once delivered', async () => {
      const [c, other] = [uniq('cfg'), uniq('other')];
      // One config lane: the receiver holds each 2 s, so three stay outstanding for a while.
      for (let i = 0; i < 3; i++) expect((await enqueue(c, '/sleep/2000')).status).toBe(202);
      const refused = await enqueue(c, '/ok');
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      const body = (await refused.json()) as any;
      expect(body.error).toMatchObject({ code: 'too_many_outstanding', config: c });
      expect(body.error.message).toContain(c);
      expect((await enqueue(other, '/ok')).status).toBe(202);
      // A config whose own bound is off takes more than the default bound.
      for (let i = 0; i < 5; i++) expect((await enqueue(UNBOUNDED, '/sleep/2000')).status).toBe(202);
      const free = (await (await fetch(`${f.baseUrl}/configs/${UNBOUNDED}/status`)).json()) as any;
      expect(free).toMatchObject({ config_id: UNBOUNDED, max_outstanding: null });
      expect(free.outstanding).toBeGreaterThanOrEqual(4);
      const status = (await (await fetch(`${f.baseUrl}/configs/${c}/status`)).json()) as any;
      expect(status).toMatchObject({ config_id: c, max_outstanding: 3 });
      expect(status.outstanding).toBeGreaterThanOrEqual(1);
      const metrics = await (await fetch(`${f.baseUrl}/metrics`)).text();
      expect(metrics).toMatch(new RegExp(`howk_config_outstanding\\{config="${c}"\\} [1-3]`));
      expect(metrics).toMatch(/howk_api_refused_total\{reason="outstanding"\} [1-9]/);
      expect(metrics).toMatch(/howk_api_refused_total\{reason="inflight"\} [1-9]/);
      await waitFor(async () => ((await (await fetch(`${f.baseUrl}/configs/${c}/status`)).json()) as any).outstanding === 0 || null, {
        what: 'deliveries to end',
        timeoutMs: 30_000,
      });
      expect((await enqueue(c, '/ok')).status).toBe(202);
      // Three sleeping webhooks and the one accepted after: the refused one was never enqueued.
      await waitFor(() => ofConfig(c).length === 4 || null, { what: 'records' });
      expect(ofConfig(c)).toHaveLength(4);
    }, 60_000);
  });
