import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiException, Svix, Webhook } from 'svix';
import { uniq, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Received, type Receiver } from '../helpers/receiver';
import { useRedisDb } from '../helpers/redis-db';

// Svix's message routes beyond create/get, through the OFFICIAL `svix` client on real Kafka +
// Redis: resending one message to one endpoint (messageAttempt.resend), and `with_content`.

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

describe('Svix message routes with the official svix client (Kafka + Redis)', () => {
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
    rx = await startReceiver(() => ({ status: 200, body: 'thanks' }));
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const at = (path: string) => rx.received.filter((r) => r.path === path);

  it('resend: one more signed delivery of the message to that endpoint only, listed as a manual attempt; the same idempotency-key is one resend', async () => {
    const tag = uniq('rs');
    const app = await svix.application.create({ name: 'Resend' });
    const a = await svix.endpoint.create(app.id, { url: rx.url(`/${tag}/a`) });
    await svix.endpoint.create(app.id, { url: rx.url(`/${tag}/b`) });
    const msg = await svix.message.create(app.id, { eventType: 'x', payload: { n: 42 } });
    await waitFor(() => at(`/${tag}/a`).length === 1 && at(`/${tag}/b`).length === 1, { what: 'the first deliveries' });

    expect(await svix.messageAttempt.resend(app.id, msg.id, a.id)).toBeDefined();
    await waitFor(() => at(`/${tag}/a`).length === 2, { what: 'the resent delivery' });
    const [first, again] = at(`/${tag}/a`);
    expect(again!.body.toString()).toBe(first!.body.toString());
    expect(again!.headers['webhook-id']).not.toBe(first!.headers['webhook-id']);
    const { key } = await svix.endpoint.getSecret(app.id, a.id);
    expect(new Webhook(key).verify(again!.body.toString(), headersOf(again!))).toEqual({ n: 42 });

    // A retried request (the same idempotency-key) is the same resend: no third delivery.
    await svix.messageAttempt.resend(app.id, msg.id, a.id, { idempotencyKey: `${tag}-k` });
    await svix.messageAttempt.resend(app.id, msg.id, a.id, { idempotencyKey: `${tag}-k` });
    await waitFor(() => at(`/${tag}/a`).length === 3, { what: 'the keyed resend' });
    await new Promise((r) => setTimeout(r, 1000));
    expect(at(`/${tag}/a`)).toHaveLength(3);
    expect(at(`/${tag}/b`)).toHaveLength(1);

    const attempts = await waitFor(
      async () => {
        const l = await svix.messageAttempt.listByMsg(app.id, msg.id);
        return l.data.filter((x) => x.endpointId === a.id).length === 3 ? l.data : undefined;
      },
      { what: 'the attempts listed' },
    );
    expect(attempts.filter((x) => x.endpointId === a.id && x.triggerType === 1)).toHaveLength(2);
  }, 60_000);

  it('resend as an attacker and with unknown ids: 404, nothing sent; the owner resends; a disabled endpoint: 409', async () => {
    const tag = uniq('rx');
    const mine = await svix.application.create({ name: 'Mine' });
    const theirs = await svix.application.create({ name: 'Theirs' });
    const ep = await svix.endpoint.create(theirs.id, { url: rx.url(`/${tag}/theirs`) });
    const msg = await svix.message.create(theirs.id, { eventType: 'x', payload: {} });
    await waitFor(() => at(`/${tag}/theirs`).length === 1, { what: 'the first delivery' });
    const other = await svix.endpoint.create(theirs.id, { url: rx.url(`/${tag}/later`) });

    const bound = (await f.fleet.security!.keys!.create({ scopes: ['admin'], config_ids: [mine.id] })).key;
    const mallory = new Svix(bound, { serverUrl: f.baseUrl });
    expect((await failure(mallory.messageAttempt.resend(theirs.id, msg.id, ep.id))).code).toBe(404);
    const anon = new Svix('howk_0000000000000000_' + 'A'.repeat(43), { serverUrl: f.baseUrl });
    expect((await failure(anon.messageAttempt.resend(theirs.id, msg.id, ep.id))).code).toBe(401);
    for (const [what, call] of [
      ['unknown application', () => svix.messageAttempt.resend('app_nope', msg.id, ep.id)],
      ['unknown message', () => svix.messageAttempt.resend(theirs.id, 'msg_nope', ep.id)],
      ['unknown endpoint', () => svix.messageAttempt.resend(theirs.id, msg.id, 'ep_nope')],
      ['an endpoint the message never went to', () => svix.messageAttempt.resend(theirs.id, msg.id, other.id)],
      ['the message of another application', () => svix.messageAttempt.resend(mine.id, msg.id, ep.id)],
    ] as const)
      expect((await failure(call())).code, what).toBe(404);
    await new Promise((r) => setTimeout(r, 1000));
    expect(at(`/${tag}/theirs`)).toHaveLength(1);
    expect(at(`/${tag}/later`)).toHaveLength(0);
    // The owner's own resend goes, and the message keeps its place in the listing (newest first);
    // once the endpoint is disabled a resend is refused (409), nothing sent.
    const msg2 = await svix.message.create(theirs.id, { eventType: 'x', payload: { second: true } });
    await svix.messageAttempt.resend(theirs.id, msg.id, ep.id);
    await waitFor(() => at(`/${tag}/theirs`).length === 3, { what: "the second message and the owner's resend" });
    expect((await svix.message.list(theirs.id)).data.map((m) => m.id)).toEqual([msg2.id, msg.id]);
    await svix.endpoint.update(theirs.id, ep.id, { url: ep.url, disabled: true });
    expect((await failure(svix.messageAttempt.resend(theirs.id, msg.id, ep.id))).code).toBe(409);
  }, 60_000);

  it('with_content=false leaves out payloads, attempt response bodies and event-type schemas; a bad value is a 422 naming it', async () => {
    const tag = uniq('wc');
    const app = await svix.application.create({ name: 'Content' });
    await svix.endpoint.create(app.id, { url: rx.url(`/${tag}/a`) });
    const schemas = { '1': { type: 'object', properties: { n: { type: 'number' } } } };
    await svix.eventType.create({ name: `${tag}.paid`, description: 'paid', schemas });
    const msg = await svix.message.create(app.id, { eventType: `${tag}.paid`, payload: { n: 7, card: 'secret' } });
    const attempts = (o?: { withContent: boolean }) => svix.messageAttempt.listByMsg(app.id, msg.id, o);
    await waitFor(async () => (await attempts()).data.length === 1, { what: 'the attempt' });

    expect((await svix.message.get(app.id, msg.id)).payload).toEqual({ n: 7, card: 'secret' });
    expect((await svix.message.get(app.id, msg.id, { withContent: false })).payload).toEqual({});
    expect((await svix.message.list(app.id, { withContent: false })).data.map((m) => m.payload)).toEqual([{}]);
    expect((await attempts()).data[0]!.response).toBe('thanks');
    expect((await attempts({ withContent: false })).data[0]!.response).toBe('');
    const byEndpoint = await svix.messageAttempt.listByEndpoint(app.id, (await svix.endpoint.list(app.id)).data[0]!.id, { withContent: false });
    expect(byEndpoint.data.map((a) => a.response)).toEqual(['']);
    const types = async (withContent?: boolean) => (await svix.eventType.list({ limit: 250, withContent })).data.find((t) => t.name === `${tag}.paid`);
    expect((await types())!.schemas).toEqual(schemas);
    expect((await types(false))!.schemas ?? null).toBeNull();

    const auth = { headers: { authorization: `Bearer ${admin}` } };
    for (const path of [`/app/${app.id}/msg/${msg.id}`, `/app/${app.id}/msg`, `/app/${app.id}/attempt/msg/${msg.id}`, '/event-type']) {
      const res = await fetch(`${f.baseUrl}/api/v1${path}?with_content=maybe`, auth);
      expect(res.status, path).toBe(422);
      expect(((await res.json()) as any).detail[0].loc).toEqual(['query', 'with_content']);
    }
  }, 60_000);
});
