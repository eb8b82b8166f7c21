import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { installTransformers } from '../fixtures/transformers/install';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { startTestFleet, TEST_SECRET, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Received, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';
import { useRedisDb } from '../helpers/redis-db';

// The common transformer patterns (docs/LUA.md, Patterns), each a fixture in test/fixtures/transformers
// loaded from transformer.script_dirs, called through POST /incoming/:name on real Kafka + Redis
// (a db of its own) and delivered by the fleet's worker to a loopback receiver. HTTP enrichment and
// secret injection have their own tests.

const redisDb = useRedisDb();

type Answer = { status: number; body: any };

describe('transformer patterns (real Kafka + Redis)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let fx: Awaited<ReturnType<typeof installTransformers>>;
  let redis: ReturnType<typeof createRedis>;
  beforeAll(async () => {
    rx = await startReceiver();
    fx = await installTransformers(rx.url('').replace(/\/$/, ''));
    f = await startTestFleet('kafka', { redisDb: redisDb(), overrides: { 'transformer.script_dirs': [fx.dir] } });
    redis = createRedis(requireEnv('REDIS_URL'), { db: redisDb(), commandTimeoutMs: 2000 });
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    await fx?.remove();
    redis?.disconnect();
  });

  const call = async (name: string, body: string | object, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await f.post(`/incoming/${name}`, typeof body === 'string' ? body : JSON.stringify(body), headers);
    return { status: res.status, body: await res.json() };
  };
  /** The receiver's copy of each webhook, once all have arrived. */
  const delivered = (ids: string[]) =>
    waitFor(
      () => {
        const got = ids.map((id) => rx.received.find((r) => r.headers['webhook-id'] === id));
        return got.every(Boolean) ? (got as Received[]) : undefined;
      },
      { what: `delivery of ${ids.join(', ')}` },
    );
  const idsOf = (a: Answer): string[] => a.body.webhooks.map((w: any) => w.id);
  const pendingFor = (configId: string) => f.records('pending').filter((r) => r.value && JSON.parse(r.value).config_id === configId);
  const bodyOf = (r: Received) => JSON.parse(r.body.toString());

  it('filtering: a paid order is forwarded byte for byte; other orders and non-JSON are dropped', async () => {
    const paid = '{ "id": "o-1",  "status": "paid", "total": 12.50 }';
    const dropped = [await call('filter', { id: 'o-2', status: 'pending' }), await call('filter', 'not json at all')];
    for (const d of dropped) expect(d).toEqual({ status: 200, body: { webhooks: [], count: 0 } });
    const ok = await call('filter', paid);
    expect(ok.status).toBe(200);
    expect(ok.body.count).toBe(1);
    const [r] = await delivered(idsOf(ok));
    expect(r!.path).toBe('/orders/paid');
    expect(r!.body.toString()).toBe(paid);
    expect(verifyStandardWebhook(TEST_SECRET, r!.headers as any, r!.body)).toBe(true);
    await waitFor(() => pendingFor('incoming:filter').length >= 1, { what: 'the webhook on the topic' });
    expect(pendingFor('incoming:filter')).toHaveLength(1);
  });

  it('routing: each event type reaches its team, unknown types the catch-all, under the config of route.json', async () => {
    const events = [
      ['charge.succeeded', '/billing/webhook'],
      ['invoice.paid', '/billing/webhook'],
      ['customer.created', '/crm/webhook'],
      ['payout.paid', '/unrouted'],
    ] as const;
    const ids: string[] = [];
    for (const [type] of events) {
      const a = await call('route', { type, amount: 1000 });
      expect(a.status).toBe(200);
      expect(a.body.count).toBe(1);
      ids.push(...idsOf(a));
    }
    const got = await delivered(ids);
    expect(got.map((r) => [bodyOf(r).type, r.path])).toEqual(events);
    expect(got.map((r) => r.headers['x-event-type'])).toEqual(events.map(([t]) => t));
    const st = (await (await fetch(`${f.baseUrl}/webhooks/${ids[0]}/status`)).json()) as any;
    expect(st.config_id).toBe('stripe-events');
    const bad = await call('route', { amount: 1 });
    expect(bad.status).toBe(422);
    expect(bad.body.error.message).toMatch(/expected a JSON event with a string "type"/);
  });

  it('payload reshaping: a nested order arrives as the flat record the receiver wants', async () => {
    const a = await call('reshape', {
      order: {
        id: 'ord_77',
        currency: 'eur',
        total_cents: 4599,
        customer: { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' },
        line_items: [{ sku: 'book', quantity: 2 }, { sku: 'pen' }],
      },
    });
    expect(a.status).toBe(200);
    const [r] = await delivered(idsOf(a));
    expect(r!.path).toBe('/fulfilment');
    expect(bodyOf(r!)).toEqual({ order_id: 'ord_77', email: 'ada@example.com', name: 'Ada Lovelace', total: 45.99, currency: 'EUR', skus: ['book', 'pen'], quantity: 3 });
    const empty = await call('reshape', { order: { id: 'ord_78', total_cents: 100, line_items: [] } });
    const [e] = await delivered(idsOf(empty));
    expect(bodyOf(e!)).toEqual({ order_id: 'ord_78', total: 1, currency: 'USD', skus: [], quantity: 0 });
  });

  it('header extraction: GitHub headers land in the payload and on the outbound request; a redelivery is the same webhook', async () => {
    const delivery = uniq('gh');
    const headers = { 'X-GitHub-Event': 'push', 'X-GitHub-Delivery': delivery };
    const body = { repository: { full_name: 'howk/howk' }, sender: { login: 'octocat' } };
    const a = await call('headers', body, headers);
    expect(a.status).toBe(200);
    const [r] = await delivered(idsOf(a));
    expect(r!.path).toBe('/ci/push');
    expect(bodyOf(r!)).toEqual({ event: 'push', delivery, repository: 'howk/howk', sender: 'octocat' });
    expect(r!.headers['x-event-type']).toBe('push');
    expect(r!.headers['x-source-delivery']).toBe(delivery);
    // GitHub redelivers: the idempotency key maps it to the first webhook.
    const again = await call('headers', body, headers);
    expect(again.status).toBe(200);
    expect(idsOf(again)).toEqual(idsOf(a));
    expect(pendingFor('incoming:headers')).toHaveLength(1);
    const missing = await call('headers', body, { 'X-GitHub-Event': 'push' });
    expect(missing.status).toBe(422);
    expect(missing.body.error.message).toMatch(/X-GitHub-Delivery are required/);
  });

  it('HMAC validation: a valid X-Signature-256 is enqueued; a bad, missing or replayed-on-another-body one is rejected with nothing enqueued', async () => {
    const sign = (body: string, secret = 'inbound-shared-secret') => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    const body = JSON.stringify({ event: 'payment.settled', id: uniq('pay') });
    const rejected: [Record<string, string>, string, RegExp][] = [
      [{ 'X-Signature-256': sign(body, 'wrong-secret') }, body, /invalid signature/],
      [{ 'X-Signature-256': sign(body) }, body.replace('settled', 'refunded'), /invalid signature/],
      [{ 'X-Signature-256': sign(body).slice(0, -1) }, body, /invalid signature/],
      [{}, body, /missing X-Signature-256/],
    ];
    for (const [headers, sent, msg] of rejected) {
      const a = await call('hmac', sent, headers);
      expect(a.status, JSON.stringify(headers)).toBe(422);
      expect(a.body.error.code).toBe('script_runtime_error');
      expect(a.body.error.message).toMatch(msg);
    }
    const ok = await call('hmac', body, { 'X-Signature-256': sign(body) });
    expect(ok.status).toBe(200);
    const [r] = await delivered(idsOf(ok));
    expect(r!.path).toBe('/verified');
    expect(r!.body.toString()).toBe(body);
    // The valid request came after the rejected ones: the topic holds it alone.
    await waitFor(() => pendingFor('incoming:hmac').length >= 1, { what: 'the valid webhook on the topic' });
    expect(pendingFor('incoming:hmac')).toHaveLength(1);
    expect(rx.received.filter((x) => x.path === '/verified')).toHaveLength(1);
  });

  it('KV dedupe: the same event twice (by header, then by payload id) becomes one webhook; the id is remembered for a day', async () => {
    const id = uniq('evt');
    const first = await call('dedupe', { kind: 'first' }, { 'Idempotency-Key': id });
    const dup = await call('dedupe', { id, kind: 'duplicate' });
    const other = await call('dedupe', { id: `${id}-2` });
    expect([first.body.count, dup.body.count, other.body.count]).toEqual([1, 0, 1]);
    const got = await delivered([...idsOf(first), ...idsOf(other)]);
    expect(got.map((r) => bodyOf(r))).toEqual([{ kind: 'first' }, { id: `${id}-2` }]);
    const ttl = await redis.ttl(`kv:t:{dedupe}:seen:${id}`);
    expect(ttl).toBeGreaterThan(23 * 3600);
    expect(ttl).toBeLessThanOrEqual(24 * 3600);
    await waitFor(() => pendingFor('incoming:dedupe').length >= 2, { what: 'the webhooks on the topic' });
    expect(pendingFor('incoming:dedupe')).toHaveLength(2);
  });

  it('rate limiting with KV: the 4th and 5th events of a customer in the window are refused; another customer is not affected', async () => {
    const customer = uniq('cust');
    const answers: Answer[] = [];
    for (let i = 0; i < 5; i++) answers.push(await call('ratelimit', { customer, i }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 422, 422]);
    expect(answers[3]!.body.error.message).toMatch(/rate limit: .* sent more than 3 events in 60 s/);
    const neighbour = await call('ratelimit', { customer: `${customer}-b`, i: 0 });
    expect(neighbour.status).toBe(200);
    const got = await delivered([...answers.slice(0, 3).flatMap(idsOf), ...idsOf(neighbour)]);
    expect(got.map((r) => bodyOf(r).i)).toEqual([0, 1, 2, 0]);
    expect(await redis.get(`kv:t:{ratelimit}:count:${customer}`)).toBe('3');
    const ttl = await redis.ttl(`kv:t:{ratelimit}:window:${customer}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60);
    await waitFor(() => pendingFor('incoming:ratelimit').length >= 4, { what: 'the webhooks on the topic' });
    expect(pendingFor('incoming:ratelimit')).toHaveLength(4);
  });

  it('multi-destination fan-out: one order reaches three services, each with its own payload, signed; a resent order adds nothing', async () => {
    const order = { id: uniq('ord'), amount_cents: 2500, currency: 'EUR', email: 'ada@example.com', items: [{ sku: 'book', qty: 1 }] };
    const a = await call('fanout', order);
    expect(a.status).toBe(200);
    expect(a.body.count).toBe(3);
    expect(a.body.webhooks.map((w: any) => new URL(w.endpoint).pathname)).toEqual(['/warehouse', '/billing', '/email']);
    const got = await delivered(idsOf(a));
    expect(got.map((r) => [r.path, r.headers['x-destination'], bodyOf(r)])).toEqual([
      ['/warehouse', 'warehouse', { order_id: order.id, items: order.items }],
      ['/billing', 'billing', { order_id: order.id, amount_cents: 2500, currency: 'EUR' }],
      ['/email', 'email', { to: 'ada@example.com', template: 'order_confirmation', order_id: order.id }],
    ]);
    for (const r of got) expect(verifyStandardWebhook(TEST_SECRET, r.headers as any, r.body)).toBe(true);
    const again = await call('fanout', order);
    expect(again.status).toBe(200);
    expect(idsOf(again)).toEqual(idsOf(a));
  });
});
