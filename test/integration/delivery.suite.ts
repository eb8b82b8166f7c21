import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { startTestFleet, TEST_SECRET, type Mode, type TestFleet } from '../helpers/fleet';
import { postRaw, startReceiver, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';

/** The delivery acceptance suite, run on real Kafka + Redis and on the embedded adapters alike. */
export const deliverySuite = (mode: Mode) =>
  describe(`delivery spine (${mode})`, () => {
    let f: TestFleet;
    let rx: Receiver;
    beforeAll(async () => {
      rx = await startReceiver((r, nth) => {
        if (r.path.startsWith('/flaky')) return nth <= 3 ? { status: 503 } : { status: 200 };
        if (r.path.startsWith('/bad-request')) return { status: 400, body: 'nope: field x is invalid' };
        if (r.path.startsWith('/down')) return { status: 500, body: 'boom' };
        if (r.path.startsWith('/limited')) return nth === 1 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 };
        return { status: 200 };
      });
      f = await startTestFleet(mode);
    });
    afterAll(async () => {
      await f?.stop();
      await rx?.close();
    });

    const statusOf = async (id: string) => (await fetch(`${f.baseUrl}/webhooks/${id}/status`)).json() as Promise<any>;
    const deliveredTo = (path: string) => rx.received.filter((r) => r.path === path);

    it('delivers 1,000 webhooks to 3 receivers, signed, with the enqueued bytes', async () => {
      const paths = ['/r1', '/r2', '/r3'];
      const sent = new Map<string, string>();
      for (let b = 0; b < 10; b++) {
        const items: string[] = [];
        for (let i = 0; i < 100; i++) {
          const n = b * 100 + i;
          // Formatting that a parse/stringify round trip would change: spaces, 1.0, big ints, escapes.
          const payload = `{ "n": ${n},  "price": 1.0, "big": 12345678901234567890123, "name": "caf\\u00e9 ☕", "nested": {"a": [1, 2 ,3]} }`;
          items.push(`{"endpoint": ${JSON.stringify(rx.url(paths[n % 3]))}, "payload": ${payload}}`);
        }
        const res = await f.post(`/webhooks/tenant-${b % 4}/enqueue/batch`, `{"webhooks": [${items.join(',')}]}`);
        expect(res.status).toBe(202);
        const body = (await res.json()) as any;
        expect(body.count).toBe(100);
        body.results.forEach((r: any, i: number) => {
          expect(r.webhook_id).toMatch(/^wh_[0-9A-Z]{26}$/);
          sent.set(r.webhook_id, items[i]!.slice(items[i]!.indexOf('"payload": ') + 11, -1));
        });
      }
      await waitFor(() => new Set(paths.flatMap((p) => deliveredTo(p).map((r) => String(r.headers['webhook-id'])))).size === 1000, { timeoutMs: 90_000, what: '1,000 deliveries' });
      const seen = new Set<string>();
      for (const r of rx.received.filter((x) => paths.includes(x.path))) {
        const id = String(r.headers['webhook-id']);
        expect(sent.has(id)).toBe(true);
        expect(r.body.toString('utf8')).toBe(sent.get(id));
        expect(verifyStandardWebhook(TEST_SECRET, r.headers as any, r.body)).toBe(true);
        expect(r.headers['x-webhook-attempt']).toBe('1');
        seen.add(id);
      }
      expect(seen.size).toBe(1000);
      const stats = (await (await fetch(`${f.baseUrl}/stats`)).json()) as any;
      expect(stats.last_1h.enqueued).toBeGreaterThanOrEqual(1000);
      await waitFor(async () => ((await (await fetch(`${f.baseUrl}/stats`)).json()) as any).last_1h.delivered >= 1000, { what: 'delivered stats' });
    });

    it('retries 503, 503, 503 and delivers at attempt 4 with backoff gaps; history shows 4 attempts', async () => {
      const res = await f.post('/webhooks/flaky/enqueue', { endpoint: rx.url('/flaky'), payload: { hello: 'world' } });
      expect(res.status).toBe(202);
      const { webhook_id } = (await res.json()) as any;
      expect(res.headers.get('location')).toBe(`/webhooks/${webhook_id}/status`);
      const status = await waitFor(
        async () => {
          const s = await statusOf(webhook_id);
          return s.state === 'delivered' ? s : undefined;
        },
        { timeoutMs: 30_000, what: 'delivery at attempt 4' },
      );
      const got = deliveredTo('/flaky');
      expect(got.map((r) => r.headers['x-webhook-attempt'])).toEqual(['1', '2', '3', '4']);
      expect(new Set(got.map((r) => r.headers['webhook-id']))).toEqual(new Set([webhook_id]));
      // base_delay 200 ms, jitter 0: gaps of 200, 400, 800 ms, plus at most a scheduler poll and a consume.
      const gaps = got.slice(1).map((r, i) => r.at - got[i]!.at);
      [200, 400, 800].forEach((want, i) => {
        expect(gaps[i]).toBeGreaterThanOrEqual(want - 5);
        expect(gaps[i]).toBeLessThan(want + 700);
      });
      expect(status.attempts).toBe(4);
      expect(status.last_status_code).toBe(200);
      expect(status.history.map((h: any) => [h.attempt, h.outcome, h.status_code])).toEqual([
        [1, 'retry', 503],
        [2, 'retry', 503],
        [3, 'retry', 503],
        [4, 'delivered', 200],
      ]);
    });

    it('dead-letters a 400 at once (unrecoverable) and an endpoint that never succeeds (exhausted)', async () => {
      const a = (await (await f.post('/webhooks/dl/enqueue', { endpoint: rx.url('/bad-request'), payload: { a: 1 }, headers: { Authorization: 'Bearer hide-me' } })).json()) as any;
      const b = (await (await f.post('/webhooks/dl/enqueue', { endpoint: rx.url('/down'), payload: { b: 2 }, max_attempts: 3 })).json()) as any;
      const sa = await waitFor(async () => ((await statusOf(a.webhook_id)).state === 'failed' ? statusOf(a.webhook_id) : undefined), { what: 'unrecoverable' });
      const sb = await waitFor(async () => ((await statusOf(b.webhook_id)).state === 'exhausted' ? statusOf(b.webhook_id) : undefined), { what: 'exhausted' });
      expect(sa.attempts).toBe(1);
      expect(sa.dead_reason).toBe('unrecoverable');
      expect(sa.last_status_code).toBe(400);
      expect(sb.attempts).toBe(3);
      expect(sb.dead_reason).toBe('exhausted');
      expect(deliveredTo('/down')).toHaveLength(3);
      const dls = await waitFor(
        () => {
          const d = f.records('deadletter').map((r) => JSON.parse(r.value!));
          return d.length >= 2 ? d : undefined;
        },
        { what: 'dead letters on the topic' },
      );
      const byId = new Map(dls.map((d: any) => [d.webhook_id, d]));
      expect(byId.get(a.webhook_id)?.reason_type).toBe('unrecoverable');
      expect(byId.get(a.webhook_id)?.last_response).toBe('nope: field x is invalid');
      expect(byId.get(a.webhook_id)?.webhook.headers.Authorization).toBe('[redacted]');
      expect(byId.get(b.webhook_id)?.reason_type).toBe('exhausted');
      expect(byId.get(b.webhook_id)?.last_status_code).toBe(500);
    });

    it('honours 429 Retry-After exactly and counts no failure', async () => {
      // max_attempts 1: if the 429 spent an attempt the webhook would be exhausted instead.
      const { webhook_id } = (await (await f.post('/webhooks/limited/enqueue', { endpoint: rx.url('/limited'), payload: { c: 3 }, max_attempts: 1 })).json()) as any;
      const s = await waitFor(async () => ((await statusOf(webhook_id)).state === 'delivered' ? statusOf(webhook_id) : undefined), { what: 'delivery after 429' });
      const got = deliveredTo('/limited');
      expect(got).toHaveLength(2);
      expect(got[1]!.at - got[0]!.at).toBeGreaterThanOrEqual(2000);
      expect(got[1]!.at - got[0]!.at).toBeLessThan(3500);
      expect(s.history.map((h: any) => h.outcome)).toEqual(['deferred', 'delivered']);
    });

    it('returns the first webhook for a repeated idempotency_key and enqueues nothing', async () => {
      const body = { endpoint: rx.url('/idem'), payload: { once: true }, idempotency_key: 'order-123' };
      const first = await f.post('/webhooks/idem/enqueue', body);
      const second = await f.post('/webhooks/idem/enqueue', body);
      expect(first.status).toBe(202);
      expect(second.status).toBe(200);
      const [a, b] = [(await first.json()) as any, (await second.json()) as any];
      expect(b.webhook_id).toBe(a.webhook_id);
      expect(b.status).toBe('duplicate');
      await waitFor(async () => (await statusOf(a.webhook_id)).state === 'delivered', { what: 'idempotent delivery' });
      // A marker enqueued afterwards on the same config arrives after anything enqueued before it.
      await f.post('/webhooks/idem/enqueue', { endpoint: rx.url('/idem'), payload: { marker: true } });
      await waitFor(() => deliveredTo('/idem').length >= 2, { what: 'marker' });
      expect(deliveredTo('/idem').map((r) => JSON.parse(r.body.toString()))).toEqual([{ once: true }, { marker: true }]);
    });

    it('signs with a per-request secret that never travels in plaintext', async () => {
      const secret = 'whsec_' + Buffer.from('per-request-secret-value-123').toString('base64');
      const { webhook_id } = (await (await f.post('/webhooks/own-secret/enqueue', { endpoint: rx.url('/own'), payload: { s: 1 }, signing_secret: secret })).json()) as any;
      const r = await waitFor(() => deliveredTo('/own')[0], { what: 'delivery with own secret' });
      expect(r.headers['webhook-id']).toBe(webhook_id);
      expect(verifyStandardWebhook(secret, r.headers as any, r.body)).toBe(true);
      expect(verifyStandardWebhook(TEST_SECRET, r.headers as any, r.body)).toBe(false);
      const pending = await waitFor(() => f.records('pending').find((x) => x.value?.includes(webhook_id)), { what: 'pending record' });
      expect(pending.value).not.toContain(secret);
      expect(pending.value).not.toContain('per-request-secret');
      expect(pending.value).toContain('"signing_secret":"enc:v1:k1:');
      expect(JSON.stringify(await statusOf(webhook_id))).not.toContain(secret);
    });

    it('answers bad input with a 4xx naming the problem and enqueues nothing', async () => {
      const ep = rx.url('/bad-input');
      const cases: [string, string, number, RegExp][] = [
        ['/webhooks/bad/enqueue', '{"endpoint": ', 400, /not valid JSON/],
        ['/webhooks/bad/enqueue', JSON.stringify({ payload: { a: 1 } }), 400, /endpoint/],
        ['/webhooks/bad/enqueue', JSON.stringify({ endpoint: ep }), 400, /payload/],
        ['/webhooks/bad/enqueue', JSON.stringify({ endpoint: 'ftp://example.com/x', payload: 1 }), 400, /endpoint/],
        ['/webhooks/bad/enqueue', JSON.stringify({ endpoint: ep, payload: 'x'.repeat(f.config.api.max_request_size) }), 413, /request body/],
        ['/webhooks/bad/enqueue/batch', JSON.stringify({ webhooks: [] }), 400, /at least 1/],
        ['/webhooks/bad/enqueue/batch', JSON.stringify({ webhooks: Array.from({ length: 101 }, () => ({ endpoint: ep, payload: 1 })) }), 400, /101 items/],
        ['/webhooks/bad/enqueue/batch', JSON.stringify({ webhooks: [{ endpoint: ep, payload: 1 }, { endpoint: ep }] }), 400, /webhooks\.1.*payload/],
        ['/webhooks/bad!config/enqueue', JSON.stringify({ endpoint: ep, payload: 1 }), 400, /config id/],
      ];
      for (const [path, body, status, msg] of cases) {
        const res = await postRaw(f.baseUrl + path, body);
        expect(res.status, `${path} ${body.slice(0, 60)}`).toBe(status);
        expect(res.json.error.message).toMatch(msg);
      }
      await f.post('/webhooks/bad/enqueue', { endpoint: ep, payload: { good: true } });
      await waitFor(() => deliveredTo('/bad-input').length >= 1, { what: 'the good webhook' });
      await new Promise((r) => setTimeout(r, 300));
      expect(deliveredTo('/bad-input').map((r) => r.body.toString())).toEqual(['{"good":true}']);
    });

    it('keeps per-config order (kafka.per_key_parallelism = 1) while other configs flow', async () => {
      for (let i = 0; i < 40; i++) {
        const webhooks = [
          { endpoint: rx.url('/ordered'), payload: { seq: i } },
          { endpoint: rx.url('/other'), payload: { seq: i } },
        ];
        // Two configs per round; the ordered one gets one webhook per request, in sequence.
        expect((await f.post('/webhooks/ordered/enqueue', webhooks[0])).status).toBe(202);
        expect((await f.post(`/webhooks/other-${i % 3}/enqueue`, webhooks[1])).status).toBe(202);
      }
      await waitFor(() => deliveredTo('/ordered').length >= 40 && deliveredTo('/other').length >= 40, { what: 'ordered deliveries' });
      expect(deliveredTo('/ordered').map((r) => JSON.parse(r.body.toString()).seq)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    });

    it('serves health, readiness and dependency checks', async () => {
      expect((await fetch(`${f.baseUrl}/health`)).status).toBe(200);
      const ready = await fetch(`${f.baseUrl}/ready`);
      expect(ready.status).toBe(200);
      const deps = (await (await fetch(`${f.baseUrl}/health/dependencies`)).json()) as any;
      expect(Object.values(deps.dependencies).every((d: any) => d.ok)).toBe(true);
      expect((await fetch(`${f.baseUrl}/webhooks/wh_nope/status`)).status).toBe(404);
    });
  });
