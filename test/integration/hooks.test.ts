import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Svix, Webhook } from 'svix';
import { uniq, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Received, type Receiver } from '../helpers/receiver';
import { useRedisDb } from '../helpers/redis-db';

// Named hooks (POST /hooks/:name) on howk-api over real Kafka + Redis, API keys on: the bytes
// and Content-Type a sender posts reach the endpoint of that uid, signed with its secret
// (checked with the official svix library); deliveries are listed with attempts, last error
// and next retry; attackers (no key, another application's key, a foreign web page) get nothing in.

const headersOf = (r: Received): Record<string, string> => Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));

describe('named hooks (Kafka + Redis)', () => {
  const db = useRedisDb();
  let f: TestFleet;
  let rx: Receiver;
  let svix: Svix;
  let admin: string;

  beforeAll(async () => {
    // A slow first backoff (1.6s then 3.2s) so a retrying delivery is seen with its next retry.
    f = await startTestFleet('kafka', { redisDb: db(), overrides: { 'api.auth.enabled': true, 'retry.base_delay': 800 } });
    await Promise.all([f.fleet.security!.ready, f.fleet.apps!.ready]);
    admin = (await f.fleet.security!.keys!.create({ scopes: ['admin'] })).key;
    svix = new Svix(admin, { serverUrl: f.baseUrl });
    rx = await startReceiver((r) => ({ status: r.path.startsWith('/down/') ? 500 : 200, body: r.path.startsWith('/down/') ? 'boom' : '' }));
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const at = (path: string) => rx.received.filter((r) => r.path === path);
  const call = (path: string, key: string | undefined, init: RequestInit = {}) =>
    fetch(`${f.baseUrl}${path}`, { ...init, headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(init.headers as Record<string, string>) } });
  const post = (path: string, key: string | undefined, body: string, type?: string, extra: Record<string, string> = {}) =>
    call(path, key, { method: 'POST', body, headers: { ...(type ? { 'content-type': type } : {}), ...extra } });
  const json = async (r: Response) => (await r.json()) as any;
  const appWith = async (tag: string, endpoints: Record<string, { path: string; extra?: Record<string, unknown> }>) => {
    const app = await svix.application.create({ name: tag, uid: tag });
    const eps: Record<string, { id: string; secret: string }> = {};
    for (const [uid, e] of Object.entries(endpoints)) {
      // maxAttempts is Howk's own field, which the official client does not send: a raw request does.
      const res = await call(`/api/v1/app/${app.id}/endpoint`, admin, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: rx.url(e.path), uid, ...e.extra }),
      });
      expect(res.status).toBe(201);
      const id = (await json(res)).id as string;
      eps[uid] = { id, secret: (await svix.endpoint.getSecret(app.id, id)).key };
    }
    return { app, eps };
  };

  it('POST /hooks/orders delivers the exact bytes with their Content-Type, signed with the endpoint secret; 202 + Location + position; deliveries show it', async () => {
    const tag = uniq('ord');
    const { app, eps } = await appWith(tag, { orders: { path: `/${tag}/orders` } });
    const sender = (await f.fleet.security!.keys!.create({ scopes: ['enqueue', 'read'], config_ids: [app.id] })).key;
    const text = 'order 42: café ✓\r\n  trailing spaces  \n';
    const res = await post('/hooks/orders', sender, text, 'text/plain; charset=utf-8');
    expect(res.status).toBe(202);
    const body = await json(res);
    expect(body).toMatchObject({ id: expect.any(String), app_id: app.id, endpoint_id: eps.orders!.id });
    expect(body.position).toEqual(expect.any(Number));
    expect(body.position).toBeGreaterThanOrEqual(0);
    expect(res.headers.get('location')).toBe(`/hooks/orders/deliveries/${body.id}`);
    const [r] = await waitFor(() => (at(`/${tag}/orders`).length ? at(`/${tag}/orders`) : undefined), { what: 'the hook delivery' });
    expect(r!.body.equals(Buffer.from(text))).toBe(true);
    expect(r!.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(r!.headers['webhook-id']).toBe(body.id);
    // svix's own signer, with that endpoint's secret, over the bytes received.
    const h = headersOf(r!);
    const expected = new Webhook(eps.orders!.secret).sign(h['webhook-id']!, new Date(Number(h['webhook-timestamp']) * 1000), r!.body.toString());
    expect(h['webhook-signature']!.split(' ')).toContain(expected);

    // A JSON body, as sent (spacing and key order kept), by an unbound key naming the application by uid.
    const raw = '{ "b": 1,   "a": [2, 1] }';
    const res2 = await post(`/hooks/orders?app=${tag}`, admin, raw, 'application/json');
    expect(res2.status).toBe(202);
    const id2 = (await json(res2)).id;
    expect(res2.headers.get('location')).toBe(`/hooks/orders/deliveries/${id2}?app=${tag}`);
    const r2 = await waitFor(() => at(`/${tag}/orders`).find((x) => x.headers['webhook-id'] === id2), { what: 'the JSON hook' });
    expect(r2.body.toString()).toBe(raw);
    expect(r2.headers['content-type']).toBe('application/json');
    expect(new Webhook(eps.orders!.secret).verify(r2.body, headersOf(r2))).toEqual({ b: 1, a: [2, 1] });

    const one = await waitFor(async () => {
      const s = await json(await call(res.headers.get('location')!, sender));
      return s.state === 'delivered' ? s : undefined;
    });
    expect(one).toMatchObject({ webhook_id: body.id, config_id: app.id, attempts: 1, last_status_code: 200, next_retry_at: null });
    const list = await waitFor(async () => {
      const l = await json(await call('/hooks/orders/deliveries', sender));
      return l.items?.length === 2 && l.items.every((x: any) => x.state === 'delivered') ? l : undefined;
    });
    expect(list.items.map((x: any) => [x.webhook_id, x.attempts])).toEqual([
      [id2, 1],
      [body.id, 1],
    ]);
  });

  it("a failing receiver: attempts, last error and next retry are shown; the endpoint's maxAttempts ends it", async () => {
    const tag = uniq('flk');
    await appWith(tag, { flaky: { path: `/down/${tag}`, extra: { maxAttempts: 2 } } });
    const res = await post(`/hooks/flaky?app=${tag}`, admin, 'ping', 'text/plain');
    expect(res.status).toBe(202);
    const loc = res.headers.get('location')!;
    const retrying = await waitFor(async () => {
      const s = await json(await call(loc, admin));
      return s.state === 'retrying' && s.attempts === 1 ? s : undefined;
    });
    expect(retrying).toMatchObject({ max_attempts: 2, last_status_code: 500, next_retry_at: expect.any(String) });
    expect(Date.parse(retrying.next_retry_at)).toBeGreaterThan(Date.parse(retrying.last_attempt_at));
    const listed = (await json(await call(`/hooks/flaky/deliveries?app=${tag}`, admin))).items;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ attempts: expect.any(Number), last_status_code: 500 });
    const done = await waitFor(
      async () => {
        const s = await json(await call(loc, admin));
        return s.state === 'exhausted' ? s : undefined;
      },
      { what: 'exhausted after 2 attempts', timeoutMs: 30_000 },
    );
    expect(done.attempts).toBe(2);
    expect(done.history.map((a: any) => a.status_code)).toEqual([500, 500]);
    expect(at(`/down/${tag}`)).toHaveLength(2);
  });

  it('an endpoint disabled after its hook was accepted: the queued webhook dead-letters as endpoint_disabled, not sent again', async () => {
    const tag = uniq('dis');
    const { app, eps } = await appWith(tag, { later: { path: `/down/${tag}` } });
    const res = await post(`/hooks/later?app=${tag}`, admin, 'once', 'text/plain');
    expect(res.status).toBe(202);
    await waitFor(() => at(`/down/${tag}`).length >= 1, { what: 'the first attempt (500)' });
    // PUT replaces: the uid is sent again, or the endpoint loses its name.
    await svix.endpoint.update(app.id, eps.later!.id, { url: rx.url(`/down/${tag}`), uid: 'later', disabled: true });
    const s = await waitFor(async () => {
      const v = await json(await call(res.headers.get('location')!, admin));
      return v.state === 'failed' ? v : undefined;
    });
    expect(s.dead_reason).toBe('endpoint_disabled');
    expect(at(`/down/${tag}`)).toHaveLength(1);
  });

  it('unknown name 404 naming it; no app for an unbound key 400; a disabled endpoint 409; a body over the bound 413; nothing enqueued', async () => {
    const tag = uniq('bad');
    const { app } = await appWith(tag, { live: { path: `/${tag}/live` }, off: { path: `/${tag}/off`, extra: { disabled: true } } });
    const unknown = await post(`/hooks/nope-${tag}?app=${tag}`, admin, 'x', 'text/plain');
    expect(unknown.status).toBe(404);
    expect((await json(unknown)).error).toMatchObject({ code: 'not_found', message: expect.stringContaining(`hook nope-${tag}`) });
    expect((await call(`/hooks/nope-${tag}/deliveries?app=${tag}`, admin)).status).toBe(404);
    const noApp = await post('/hooks/live', admin, 'x', 'text/plain');
    expect(noApp.status).toBe(400);
    expect((await json(noApp)).error.message).toContain('app query parameter');
    const off = await post(`/hooks/off?app=${tag}`, admin, 'x', 'text/plain');
    expect(off.status).toBe(409);
    expect((await json(off)).error.code).toBe('endpoint_disabled');
    const big = await post(`/hooks/live?app=${tag}`, admin, 'x'.repeat(Math.floor((f.config.api.max_request_size * 3) / 4) + 1), 'text/plain');
    expect(big.status).toBe(413);
    const badType = await post(`/hooks/live?app=${tag}`, admin, 'x', 'not a type');
    expect(badType.status).toBe(400);
    expect((await json(await call(`/hooks/live/deliveries?app=${tag}`, admin))).items).toEqual([]);
    expect((await json(await call(`/hooks/off/deliveries?app=${tag}`, admin))).items).toEqual([]);
    expect((await json(await call(`/webhooks?config_id=${app.id}`, admin))).items).toEqual([]);
  });

  it("as an attacker: no key 401, a read key 403, A's key cannot use B's hooks (404), a foreign web page is refused (403); nothing enqueued", async () => {
    const a = await appWith(uniq('a'), { inbox: { path: `/${uniq('pa')}` } });
    const bTag = uniq('b');
    const b = await appWith(bTag, { [`vault-${bTag}`]: { path: `/${bTag}/vault` } });
    const bName = `vault-${bTag}`;
    const aKey = (await f.fleet.security!.keys!.create({ scopes: ['enqueue', 'read'], config_ids: [a.app.id] })).key;
    const bKey = (await f.fleet.security!.keys!.create({ scopes: ['enqueue', 'read'], config_ids: [b.app.id] })).key;
    const reader = (await f.fleet.security!.keys!.create({ scopes: ['read'], config_ids: [b.app.id] })).key;

    expect((await post(`/hooks/${bName}?app=${bTag}`, undefined, 'x', 'text/plain')).status).toBe(401);
    expect((await post(`/hooks/${bName}`, reader, 'x', 'text/plain')).status).toBe(403);
    for (const path of [`/hooks/${bName}`, `/hooks/${bName}?app=${bTag}`, `/hooks/${bName}?app=${b.app.id}`]) {
      const r = await post(path, aKey, 'evil', 'text/plain');
      expect(r.status, path).toBe(404);
      expect(JSON.stringify(await r.json()), path).not.toContain(b.eps[bName]!.id);
    }
    expect((await call(`/hooks/${bName}/deliveries?app=${bTag}`, aKey)).status).toBe(404);
    // A foreign page's simple request (text/plain, no preflight), with the right key even.
    const foreign: Record<string, string>[] = [{ origin: 'https://evil.example' }, { 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }];
    for (const headers of foreign) {
      const r = await post(`/hooks/${bName}`, bKey, 'csrf', 'text/plain', headers);
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect((await json(r)).error.code).toBe('cross_origin_refused');
    }
    // B's own key, the same way a server sends it, goes through: a mark after which nothing else may arrive.
    const ok = await post(`/hooks/${bName}`, bKey, 'legit', 'text/plain');
    expect(ok.status).toBe(202);
    const okId = (await json(ok)).id;
    await waitFor(() => at(`/${bTag}/vault`).length >= 1, { what: "B's own hook" });
    expect(at(`/${bTag}/vault`).map((r) => r.body.toString())).toEqual(['legit']);
    const listed = (await json(await call(`/hooks/${bName}/deliveries`, bKey))).items;
    expect(listed.map((x: any) => x.webhook_id)).toEqual([okId]);
    // A's key cannot read B's delivery through A's own hook name either.
    expect((await call(`/hooks/inbox/deliveries/${okId}`, aKey)).status).toBe(404);
  });
});
