import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiException, Svix, Webhook } from 'svix';
import { uniq, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Received, type Receiver } from '../helpers/receiver';
import { useRedisDb } from '../helpers/redis-db';

// The Svix API driven by the OFFICIAL `svix` client against howk-api on real Kafka + Redis:
// fan-out by event-type filter, each delivery verified with the official verifier and THAT
// endpoint's secret, eventId idempotency, rotation, config binding as an attacker, bad input.

const headersOf = (r: Received): Record<string, string> => Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
const failure = async (p: Promise<unknown>): Promise<ApiException<any>> => {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiException) return e;
    throw e;
  }
  throw new Error('expected the call to fail');
};

describe('Svix API with the official svix client (Kafka + Redis)', () => {
  const db = useRedisDb();
  let f: TestFleet;
  let rx: Receiver;
  let svix: Svix;
  let admin: string;

  beforeAll(async () => {
    f = await startTestFleet('kafka', { redisDb: db(), overrides: { 'api.auth.enabled': true } });
    await Promise.all([f.fleet.security!.ready, f.fleet.apps!.ready]);
    admin = (await f.fleet.security!.keys!.create({ scopes: ['admin'] })).key;
    svix = new Svix(admin, { serverUrl: f.baseUrl });
    rx = await startReceiver((r) => ({ status: r.path.startsWith('/down/') ? 503 : 200 }));
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const at = (path: string) => rx.received.filter((r) => r.path === path);

  it('one message reaches exactly the 3 of 5 endpoints whose filter matches, each signed with its own secret; the same eventId is the same message', async () => {
    const tag = uniq('fan');
    const app = await svix.application.create({ name: 'Acme', uid: tag });
    expect(app.id).toMatch(/^app_/);
    expect((await svix.application.get(tag)).id).toBe(app.id);
    expect((await svix.application.getOrCreate({ name: 'ignored', uid: tag })).id).toBe(app.id);
    for (const name of ['invoice.paid', 'invoice.failed', 'user.created']) {
      await svix.eventType.create({ name: `${tag}.${name}`, description: name }).catch((e) => {
        if (!(e instanceof ApiException && e.code === 409)) throw e;
      });
    }
    const t = (n: string) => `${tag}.${n}`;
    const filters: (string[] | undefined)[] = [[t('invoice.paid')], [t('invoice.paid'), t('user.created')], undefined, [t('user.created')], [t('invoice.failed')]];
    const eps = [];
    for (const [i, filterTypes] of filters.entries())
      eps.push(await svix.endpoint.create(app.id, { url: rx.url(`/${tag}/e${i}`), filterTypes, uid: `e${i}`, description: `endpoint ${i}` }));
    expect(eps.map((e) => e.id)).toEqual(expect.arrayContaining([expect.stringMatching(/^ep_/)]));
    const list = await svix.endpoint.list(app.id, { limit: 2 });
    expect(list.data).toHaveLength(2);
    expect(list.done).toBe(false);
    const rest = await svix.endpoint.list(app.id, { limit: 10, iterator: list.iterator });
    expect(rest.data).toHaveLength(3);
    expect(rest.done).toBe(true);

    const msg = await svix.message.create(app.uid!, { eventType: t('invoice.paid'), payload: { amount: 42, n: [1, 2] }, eventId: `${tag}-evt-1` });
    expect(msg.id).toMatch(/^msg_/);
    const again = await svix.message.create(app.id, { eventType: t('invoice.paid'), payload: { amount: 42, n: [1, 2] }, eventId: `${tag}-evt-1` });
    expect(again.id).toBe(msg.id);
    // A later message to e1..e3 marks the end: by then a duplicate of the first would be there.
    await svix.message.create(app.id, { eventType: t('user.created'), payload: { user: 1 } });
    await waitFor(() => [1, 2, 3].every((i) => at(`/${tag}/e${i}`).some((r) => r.body.toString().includes('"user"'))), { what: 'the second message' });
    await waitFor(() => [0, 1, 2].every((i) => at(`/${tag}/e${i}`).some((r) => r.body.toString().includes('amount'))), { what: 'the first message' });

    const secrets = await Promise.all(eps.map(async (e) => (await svix.endpoint.getSecret(app.id, e.id)).key));
    expect(new Set(secrets).size).toBe(5);
    for (const [i, secret] of secrets.entries()) {
      const paid = at(`/${tag}/e${i}`).filter((r) => r.body.toString().includes('amount'));
      expect(paid, `endpoint ${i}`).toHaveLength(i <= 2 ? 1 : 0);
      for (const r of at(`/${tag}/e${i}`)) {
        expect(new Webhook(secret).verify(r.body.toString(), headersOf(r))).toBeTruthy();
        expect(() => new Webhook(secrets[(i + 1) % 5]!).verify(r.body.toString(), headersOf(r))).toThrow();
      }
    }
    expect(JSON.parse(at(`/${tag}/e0`)[0]!.body.toString())).toEqual({ amount: 42, n: [1, 2] });

    const got = await svix.message.get(app.id, msg.id);
    expect(got).toMatchObject({ id: msg.id, eventType: t('invoice.paid'), eventId: `${tag}-evt-1`, payload: { amount: 42, n: [1, 2] } });
    const msgs = await svix.message.list(app.id);
    expect(msgs.data.map((m) => m.id)).toHaveLength(2);
    expect(msgs.data[1]!.id).toBe(msg.id);
    const attempts = await waitFor(async () => {
      const a = await svix.messageAttempt.listByMsg(app.id, msg.id);
      return a.data.length === 3 ? a : undefined;
    });
    expect(new Set(attempts.data.map((a) => a.endpointId))).toEqual(new Set(eps.slice(0, 3).map((e) => e.id)));
    expect(attempts.data.every((a) => a.responseStatusCode === 200 && a.status === 0)).toBe(true);
  });

  it('a rotated secret keeps signing next to the new one; headers are sent; a disabled endpoint gets nothing', async () => {
    const tag = uniq('rot');
    const app = await svix.application.create({ name: 'Rot' });
    const ep = await svix.endpoint.create(app.id, { url: rx.url(`/${tag}/a`) });
    const off = await svix.endpoint.create(app.id, { url: rx.url(`/${tag}/off`), disabled: true });
    const old = (await svix.endpoint.getSecret(app.id, ep.id)).key;
    await svix.endpoint.rotateSecret(app.id, ep.id, {});
    const fresh = (await svix.endpoint.getSecret(app.id, ep.id)).key;
    expect(fresh).not.toBe(old);
    await svix.endpoint.updateHeaders(app.id, ep.id, { headers: { 'x-tenant': 'acme' } });
    expect((await svix.endpoint.getHeaders(app.id, ep.id)).headers).toEqual({ 'x-tenant': 'acme' });
    await svix.message.create(app.id, { eventType: 'any.thing', payload: { k: 1 } });
    const [r] = await waitFor(() => (at(`/${tag}/a`).length ? at(`/${tag}/a`) : undefined));
    expect(new Webhook(fresh).verify(r!.body.toString(), headersOf(r!))).toEqual({ k: 1 });
    expect(new Webhook(old).verify(r!.body.toString(), headersOf(r!))).toEqual({ k: 1 });
    expect(r!.headers['x-tenant']).toBe('acme');
    expect(at(`/${tag}/off`)).toHaveLength(0);
    expect((await svix.endpoint.get(app.id, off.id)).disabled).toBe(true);
  });

  it('disabling an endpoint dead-letters its queued webhooks as endpoint_disabled; re-enabled, it gets new messages', async () => {
    const tag = uniq('off');
    const app = await svix.application.create({ name: 'Off' });
    const url = rx.url(`/down/${tag}`);
    const ep = await svix.endpoint.create(app.id, { url });
    const msg = await svix.message.create(app.id, { eventType: 'x', payload: { n: 1 } });
    await waitFor(() => at(`/down/${tag}`).length >= 1, { what: 'the first attempt (503)' });
    await svix.endpoint.update(app.id, ep.id, { url, disabled: true });
    const webhookId = f.fleet.apps!.store.table.message(app.id, msg.id)!.deliveries[0]!.webhook_id;
    const auth = { headers: { authorization: `Bearer ${admin}` } };
    const status = await waitFor(
      async () => {
        const s = (await (await fetch(`${f.baseUrl}/webhooks/${webhookId}/status`, auth)).json()) as any;
        return s.state === 'failed' ? s : undefined;
      },
      { what: 'the dead letter' },
    );
    expect(status.dead_reason).toBe('endpoint_disabled');
    const sent = at(`/down/${tag}`).length;
    const dead = (await (await fetch(`${f.baseUrl}/deadletter?config_id=${app.id}`, auth)).json()) as any;
    expect(dead.items.map((x: any) => [x.webhook_id, x.reason_type])).toEqual([[webhookId, 'endpoint_disabled']]);
    await svix.endpoint.update(app.id, ep.id, { url, disabled: false });
    await svix.message.create(app.id, { eventType: 'x', payload: { n: 2 } });
    await waitFor(() => at(`/down/${tag}`).some((r) => r.body.toString() === '{"n":2}'), { what: 'the message after re-enabling' });
    expect(at(`/down/${tag}`).filter((r) => r.body.toString() === '{"n":1}')).toHaveLength(sent);
  });

  it("an endpoint's maxAttempts bounds its webhooks' attempts; its attempts are listed by endpoint", async () => {
    const tag = uniq('max');
    const app = await svix.application.create({ name: 'Max' });
    const url = rx.url(`/down/${tag}`);
    // maxAttempts is Howk's own field: the official client does not send it, so a raw request does.
    const res = await fetch(`${f.baseUrl}/api/v1/app/${app.id}/endpoint`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url, maxAttempts: 2 }),
    });
    expect(res.status).toBe(201);
    const ep = (await res.json()) as any;
    expect(ep.maxAttempts).toBe(2);
    const msg = await svix.message.create(app.id, { eventType: 'x', payload: { n: 1 } });
    const webhookId = f.fleet.apps!.store.table.message(app.id, msg.id)!.deliveries[0]!.webhook_id;
    const auth = { headers: { authorization: `Bearer ${admin}` } };
    await waitFor(async () => ((await (await fetch(`${f.baseUrl}/webhooks/${webhookId}/status`, auth)).json()) as any).state === 'exhausted', {
      what: 'exhausted after 2 attempts',
    });
    expect(at(`/down/${tag}`)).toHaveLength(2);
    const attempts = await svix.messageAttempt.listByEndpoint(app.id, ep.id);
    expect(attempts.data.map((a) => [a.msgId, a.responseStatusCode, a.status])).toEqual([
      [msg.id, 503, 2],
      [msg.id, 503, 2],
    ]);
  });

  it('as an attacker: no key 401; a key bound to application A cannot read or write application B', async () => {
    const a = await svix.application.create({ name: 'A', uid: uniq('a') });
    const b = await svix.application.create({ name: 'B', uid: uniq('b') });
    const bEp = await svix.endpoint.create(b.id, { url: rx.url('/b') });
    const bMsg = await svix.message.create(b.id, { eventType: 'x', payload: {} });
    const anon = new Svix('howk_0000000000000000_' + 'A'.repeat(43), { serverUrl: f.baseUrl });
    expect((await failure(anon.application.list())).code).toBe(401);
    expect((await fetch(`${f.baseUrl}/api/v1/app/${b.id}/endpoint`)).status).toBe(401);
    const bound = (await f.fleet.security!.keys!.create({ scopes: ['admin'], config_ids: [a.id] })).key;
    const mallory = new Svix(bound, { serverUrl: f.baseUrl });
    expect((await mallory.application.list()).data.map((x) => x.id)).toEqual([a.id]);
    await mallory.endpoint.create(a.id, { url: rx.url('/a') });
    for (const [what, call] of [
      ['get app', () => mallory.application.get(b.id)],
      ['get app by uid', () => mallory.application.get(b.uid!)],
      ['list endpoints', () => mallory.endpoint.list(b.id)],
      ['get secret', () => mallory.endpoint.getSecret(b.id, bEp.id)],
      ['rotate secret', () => mallory.endpoint.rotateSecret(b.id, bEp.id, {})],
      ['create endpoint', () => mallory.endpoint.create(b.id, { url: rx.url('/evil') })],
      ['delete endpoint', () => mallory.endpoint.delete(b.id, bEp.id)],
      ['send message', () => mallory.message.create(b.id, { eventType: 'x', payload: {} })],
      ['get message', () => mallory.message.get(b.id, bMsg.id)],
      ['list messages', () => mallory.message.list(b.id)],
      ['attempts by message', () => mallory.messageAttempt.listByMsg(b.id, bMsg.id)],
      ['attempts by endpoint', () => mallory.messageAttempt.listByEndpoint(b.id, bEp.id)],
      ['get headers', () => mallory.endpoint.getHeaders(b.id, bEp.id)],
      ['set headers', () => mallory.endpoint.updateHeaders(b.id, bEp.id, { headers: { 'x-evil': '1' } })],
      ['update endpoint', () => mallory.endpoint.update(b.id, bEp.id, { url: rx.url('/evil') })],
      ['update app', () => mallory.application.update(b.id, { name: 'pwned' })],
      ['delete app', () => mallory.application.delete(b.id)],
    ] as const) {
      const e = await failure((call as () => Promise<unknown>)());
      expect(e.code, what).toBe(404);
      expect(JSON.stringify(e.body), what).not.toContain(bEp.id);
    }
    expect((await failure(mallory.application.create({ name: 'mine' }))).code).toBe(403);
    expect((await failure(mallory.eventType.create({ name: uniq('et'), description: '' }))).code).toBe(403);
    const sender = new Svix((await f.fleet.security!.keys!.create({ scopes: ['enqueue'], config_ids: [a.id] })).key, { serverUrl: f.baseUrl });
    expect((await sender.message.create(a.id, { eventType: 'x', payload: {} })).id).toMatch(/^msg_/);
    expect((await failure(sender.endpoint.create(a.id, { url: rx.url('/x') }))).code).toBe(403);
    expect((await failure(sender.endpoint.list(a.id))).code).toBe(403);
    const reader = new Svix((await f.fleet.security!.keys!.create({ scopes: ['read'] })).key, { serverUrl: f.baseUrl });
    expect((await failure(reader.endpoint.getSecret(b.id, bEp.id))).code).toBe(403);
    // B is untouched.
    expect((await svix.endpoint.list(b.id)).data.map((e) => [e.id, e.url])).toEqual([[bEp.id, rx.url('/b')]]);
    expect((await svix.endpoint.getHeaders(b.id, bEp.id)).headers).toEqual({});
    expect((await svix.application.get(b.id)).name).toBe('B');
  });

  it('bad input: 422 naming the field, 409 on a taken uid, nothing stored', async () => {
    const app = await svix.application.create({ name: 'Bad', uid: uniq('bad') });
    await svix.endpoint.create(app.id, { url: rx.url('/ok'), uid: 'taken' });
    const cases: [string, unknown, string][] = [
      ['bad url', { url: 'ftp://x' }, 'url'],
      ['no url', {}, 'url'],
      ['long description', { url: rx.url('/x'), description: 'd'.repeat(f.config.svix.max_description_length + 1) }, 'description'],
      ['reserved header', { url: rx.url('/x'), headers: { 'webhook-signature': 'v1,x' } }, 'headers'],
      ['bad secret', { url: rx.url('/x'), secret: 'whsec_AA' }, 'secret'],
    ];
    for (const [what, body, field] of cases) {
      const e = await failure(svix.endpoint.create(app.id, body as any));
      expect(e.code, what).toBe(422);
      expect(
        e.body.detail.some((d: any) => d.loc.join('.').includes(field)),
        `${what}: ${JSON.stringify(e.body)}`,
      ).toBe(true);
    }
    // The client drops fields it does not know: a raw request sends one (a typo of filterTypes).
    const raw = await fetch(`${f.baseUrl}/api/v1/app/${app.id}/endpoint`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: rx.url('/x'), filterType: ['a'] }),
    });
    expect(raw.status).toBe(422);
    expect(await raw.json()).toMatchObject({ code: 'validation', detail: [{ loc: ['body'], msg: expect.stringContaining('filterType') }], error: { code: 'invalid_request' } });
    expect((await failure(svix.endpoint.create(app.id, { url: rx.url('/x'), uid: 'taken' }))).code).toBe(409);
    expect((await failure(svix.application.create({ name: 'dup', uid: app.uid }))).code).toBe(409);
    const unknown = await fetch(`${f.baseUrl}/api/v1/app/${app.id}/nothing-here`, { headers: { authorization: `Bearer ${admin}` } });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ code: 'not_found', detail: expect.stringContaining('no route'), error: { code: 'not_found' } });
    const text = await fetch(`${f.baseUrl}/api/v1/app/${app.id}/endpoint`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(text.status).toBe(415);
    expect(((await text.json()) as any).code).toBe('unsupported_media_type');
    expect((await failure(svix.message.create(app.id, { eventType: 'x', payload: {}, deliverAt: new Date() }))).code).toBe(422);
    expect((await svix.endpoint.list(app.id)).data).toHaveLength(1);
    expect((await svix.message.list(app.id)).data).toHaveLength(0);
  });
});
