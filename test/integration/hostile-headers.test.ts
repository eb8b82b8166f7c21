import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointHash, webhookId } from '../../core/domain/ids';
import { iso } from '../../core/domain/time';
import { encodeWebhook, type Webhook } from '../../core/records/webhook';
import { createSecretBox } from '../../core/signing/secret-box';
import { deadLetterRecords } from '../helpers/dead-letters';
import { waitFor } from '../helpers/env';
import { startTestFleet, TEST_SECRETS_KEY, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// One tenant's headers or secret must not stop deliveries to a destination shared with other
// tenants. undici refuses some headers (Expect, Keep-Alive, a € or a control character in a
// value) while building the request, inside its connection pool: every such attempt used to
// cost one of the delivery.max_conns_per_host pooled connections for good, and counted as an
// endpoint failure. Real Kafka + Redis, one worker, loopback receivers shared by the tenants.

const HOSTILE: Record<string, string>[] = [
  { Expect: '100-continue' },
  { 'X-Price': '5 €' },
  { 'Keep-Alive': 'timeout=5' },
  { 'X-Ctl': 'a\u0001b' },
  { 'X-Del': 'a\u007fb' },
  { Upgrade: 'h2c' },
];

describe('hostile headers and signing secrets (kafka + redis)', () => {
  let f: TestFleet;
  const receivers: Receiver[] = [];
  const receiver = async () => {
    const rx = await startReceiver(() => ({ status: 200 }));
    receivers.push(rx);
    return rx;
  };

  beforeAll(async () => {
    f = await startTestFleet('kafka', { overrides: { 'retry.max_attempts': 3 } });
    // The worker's consumer group has joined once a first webhook is delivered.
    const warm = await receiver();
    expect((await f.post('/webhooks/warm/enqueue', { endpoint: warm.url('/warm'), payload: {} })).status).toBe(202);
    await waitFor(() => warm.received.length >= 1, { timeoutMs: 60_000, what: 'warm-up delivery' });
  }, 90_000);
  afterAll(async () => {
    await f?.stop();
    for (const rx of receivers) await rx.close();
  });

  const endpointView = async (endpoint: string) => (await (await fetch(`${f.baseUrl}/endpoints/${await endpointHash(endpoint)}`)).json()) as any;
  const deadLetters = (configPrefix: string) => deadLetterRecords(f).filter((d) => String(d.config_id).startsWith(configPrefix));
  /** However many hostile webhooks went to `endpoint`, its circuit is closed and never opened. */
  const expectCircuitNeverOpened = async (endpoint: string) => {
    const v = await endpointView(endpoint);
    expect(v.circuit.state).toBe('CLOSED');
    expect(v.circuit.opened_count ?? 0).toBe(0);
  };

  /** Records as an older api (or any other producer) left them on the pending topic, bypassing enqueue's checks. */
  const produceRaw = async (configPrefix: string, endpoint: string, n: number, shape: (i: number) => Partial<Webhook>) => {
    const hash = await endpointHash(endpoint);
    const now = Date.now();
    const hooks: Webhook[] = Array.from({ length: n }, (_, i) => ({
      id: webhookId(now),
      config_id: `${configPrefix}-${i % 10}`,
      endpoint,
      endpoint_hash: hash,
      payload: `{"bad":${i}}`,
      headers: {},
      attempt: 0,
      max_attempts: 3,
      deferrals: 0,
      created_at: iso(now),
      scheduled_at: iso(now),
      ...shape(i),
    }));
    const producer = f.logStore.producer();
    for (let i = 0; i < hooks.length; i += 200)
      await producer.send(hooks.slice(i, i + 200).map((w) => ({ topic: f.config.kafka.topics.pending, key: w.config_id, value: encodeWebhook(w) })));
    await producer.close();
  };

  const enqueueGood = async (config: string, endpoint: string, n: number) => {
    const res = await f.post(`/webhooks/${config}/enqueue/batch`, {
      webhooks: Array.from({ length: n }, (_, i) => ({ endpoint, payload: { good: i }, headers: { 'X-Tenant': 'good', 'X-Latin1': 'café' } })),
    });
    expect(res.status).toBe(202);
  };
  const goodDelivered = (rx: Receiver) => new Set(rx.received.filter((r) => r.headers['x-tenant'] === 'good').map((r) => JSON.parse(r.body.toString()).good)).size;

  it("1,000 records already on howk.pending with headers undici refuses: another tenant's 100 webhooks to the same receiver are all delivered, its circuit stays closed", async () => {
    const rx = await receiver();
    const endpoint = rx.url('/shared');
    await produceRaw('old', endpoint, 1000, (i) => ({ headers: HOSTILE[i % HOSTILE.length]! }));
    await enqueueGood('good-old', endpoint, 100);
    await waitFor(() => goodDelivered(rx) >= 100, { timeoutMs: 90_000, what: '100 good deliveries' });
    const dls = await waitFor(() => (deadLetters('old-').length >= 1000 ? deadLetters('old-') : undefined), { timeoutMs: 90_000, what: '1,000 dead letters' });
    expect(new Set(dls.map((d) => d.reason_type))).toEqual(new Set(['invalid_request']));
    expect(dls.find((d) => d.webhook.headers.Expect)?.last_error).toMatch(/^invalid_request: header Expect: /);
    // None of them was sent, and none was tried twice: nothing about them can improve.
    expect(rx.received.filter((r) => r.body.toString().includes('"bad"'))).toHaveLength(0);
    await expectCircuitNeverOpened(endpoint);
  }, 240_000);

  it('a delivery script that returns such headers: the good tenant is delivered, the circuit stays closed, Expect is dropped and a € fails the script', async () => {
    const rx = await receiver();
    const endpoint = rx.url('/scripted');
    // One namespace script for the ten configs sb:0..sb:9 (applied to children: they opt in).
    const script = `if request.payload.bad % 2 == 0 then request.headers['Expect'] = '100-continue' request.headers['Keep-Alive'] = 'timeout=5' else request.headers['X-Price'] = '5 €' end`;
    expect((await fetch(`${f.baseUrl}/config/sb/script?apply_to_children=true`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: script })).status).toBe(200);
    for (let b = 0; b < 10; b++) {
      const res = await f.post(`/webhooks/sb:${b}/enqueue/batch`, { webhooks: Array.from({ length: 100 }, (_, i) => ({ endpoint, payload: { bad: b * 100 + i } })) });
      expect(res.status).toBe(202);
    }
    await enqueueGood('good-scripted', endpoint, 100);
    await waitFor(() => goodDelivered(rx) >= 100, { timeoutMs: 90_000, what: '100 good deliveries' });
    // Even payloads: the script's Expect and Keep-Alive are dropped and the webhook delivered without them.
    await waitFor(() => rx.received.filter((r) => r.body.toString().includes('"bad"')).length >= 500, { timeoutMs: 90_000, what: '500 scripted deliveries' });
    const scripted = rx.received.filter((r) => r.body.toString().includes('"bad"'));
    expect(scripted.every((r) => JSON.parse(r.body.toString()).bad % 2 === 0 && r.headers.expect === undefined && r.headers['x-price'] === undefined)).toBe(true);
    // Odd payloads: the € cannot be sent; the script's result is refused and the webhook dead-lettered.
    const dls = await waitFor(() => (deadLetters('sb:').length >= 500 ? deadLetters('sb:') : undefined), { timeoutMs: 90_000, what: '500 dead letters' });
    expect(new Set(dls.map((d) => d.reason_type))).toEqual(new Set(['script_runtime_error']));
    expect(dls[0].reason).toMatch(/x-price: .*not one byte/i);
    await expectCircuitNeverOpened(endpoint);
  }, 240_000);

  it('stored signing secrets that cannot sign (whsec_!!!!, whsec_AA) dead-letter as invalid_secret without opening the circuit for others', async () => {
    const rx = await receiver();
    const endpoint = rx.url('/secrets');
    const box = await createSecretBox('k1', { k1: TEST_SECRETS_KEY });
    const sealed = [await box.seal('whsec_!!!!'), await box.seal('whsec_AA')];
    await produceRaw('sec', endpoint, 100, (i) => ({ signing_secret: sealed[i % 2]! }));
    await enqueueGood('good-sec', endpoint, 100);
    await waitFor(() => goodDelivered(rx) >= 100, { timeoutMs: 90_000, what: '100 good deliveries' });
    const dls = await waitFor(() => (deadLetters('sec-').length >= 100 ? deadLetters('sec-') : undefined), { timeoutMs: 90_000, what: '100 dead letters' });
    expect(new Set(dls.map((d) => d.reason_type))).toEqual(new Set(['invalid_secret']));
    // The reason says what is wrong with the secret, never the secret.
    const told = dls.map((d) => `${d.reason} ${d.last_error} ${JSON.stringify(d.webhook)}`).join('\n');
    expect(told).toMatch(/invalid_secret: signing secret: a whsec_ secret must/);
    expect(told).not.toContain('whsec_!!!!');
    expect(told).not.toContain('whsec_AA');
    expect(rx.received.filter((r) => r.body.toString().includes('"bad"'))).toHaveLength(0);
    await expectCircuitNeverOpened(endpoint);
  }, 240_000);

  describe('the API refuses them (400 naming the field, nothing enqueued)', () => {
    const pendingOf = (config: string) => f.records('pending').filter((r) => r.key === config);
    const expect400 = async (res: Response, field: string) => {
      expect(res.status).toBe(400);
      const body = (await res.json()) as any;
      expect(body.error.code).toBe('invalid_request');
      expect(body.error.field).toBe(field);
      expect(body.error.message).toContain(field);
    };

    it('single and batch enqueue', async () => {
      const ep = 'http://127.0.0.1:9/x';
      for (const [headers, field] of [
        [{ Expect: '100-continue' }, 'headers.Expect'],
        [{ 'X-Price': '5 €' }, 'headers.X-Price'],
        [{ 'Keep-Alive': 'timeout=5' }, 'headers.Keep-Alive'],
        [{ Upgrade: 'h2c' }, 'headers.Upgrade'],
        [{ 'X-A': 'a\u0001' }, 'headers.X-A'],
        [{ 'X-A': '\u007f' }, 'headers.X-A'],
        [{ TE: 'trailers' }, 'headers.TE'],
      ] as const) {
        await expect400(await f.post('/webhooks/api-400/enqueue', { endpoint: ep, payload: {}, headers }), field);
      }
      await expect400(await f.post('/webhooks/api-400/enqueue', { endpoint: ep, payload: {}, signing_secret: 'whsec_AA' }), 'signing_secret');
      await expect400(await f.post('/webhooks/api-400/enqueue', { endpoint: ep, payload: {}, signing_secret: 'whsec_!!!!' }), 'signing_secret');
      const ok = { endpoint: ep, payload: {} };
      await expect400(await f.post('/webhooks/api-400/enqueue/batch', { webhooks: [ok, ok, ok, { ...ok, headers: { x: '€' } }] }), 'webhooks.3.headers.x');
      await expect400(await f.post('/webhooks/api-400/enqueue/batch', { webhooks: [ok, { ...ok, headers: { Expect: '100-continue' } }] }), 'webhooks.1.headers.Expect');
      // A good webhook after them: once it is on the topic, anything before it would be too.
      expect((await f.post('/webhooks/api-400/enqueue', { ...ok, headers: { 'X-Latin1': 'café' } })).status).toBe(202);
      await waitFor(() => pendingOf('api-400').length >= 1, { what: 'the good webhook on howk.pending' });
      expect(pendingOf('api-400')).toHaveLength(1);
    });

    it('PUT /configs/:id/secret', async () => {
      const put = (secret: string) =>
        fetch(`${f.baseUrl}/configs/api-400/secret`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ secret }) });
      for (const secret of ['whsec_AAAAAAAAAAAAAAAAAAAA', 'whsec_!!!!!!!!!!!!!!!!!!!!', `whsec_${Buffer.alloc(15, 1).toString('base64')}`])
        await expect400(await put(secret), 'secret');
      expect((await put(`whsec_${Buffer.alloc(16, 1).toString('base64')}`)).status).toBe(200);
    });
  });
});
