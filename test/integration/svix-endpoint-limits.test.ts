import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { useRedisDb } from '../helpers/redis-db';

// Per-endpoint limits of the Svix API on real Kafka + Redis: an endpoint's throttleRate paces
// its webhooks at delivery time (another endpoint of the app keeps its pace), and a deleted
// endpoint's queued webhooks dead-letter instead of going out.

describe('Svix endpoint limits (Kafka + Redis)', () => {
  const db = useRedisDb();
  let f: TestFleet;
  let rx: Receiver;
  let admin: string;

  beforeAll(async () => {
    // The global per-endpoint rate limit is off: only the endpoint's own throttleRate paces it.
    f = await startTestFleet('kafka', { redisDb: db(), overrides: { 'api.auth.enabled': true, 'rate_limit.rate': 0 } });
    await Promise.all([f.fleet.security!.ready, f.fleet.apps!.ready]);
    admin = (await f.fleet.security!.keys!.create({ scopes: ['admin'] })).key;
    rx = await startReceiver((r) => ({ status: r.path.includes('/down/') ? 503 : 200 }));
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${f.baseUrl}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json().catch(() => null)) as any };
  };
  const at = (path: string) => rx.received.filter((r) => r.path === path);

  it('throttleRate 5/s: 30 webhooks take at least ~5 s and never more than rate + burst a second; an unthrottled endpoint of the app is not slowed', async () => {
    const tag = uniq('thr');
    const app = (await api('POST', '/app', { name: 'Throttled' })).json;
    const slow = await api('POST', `/app/${app.id}/endpoint`, { url: rx.url(`/${tag}/limited`), throttleRate: 5 });
    expect(slow.status).toBe(201);
    expect(slow.json.throttleRate).toBe(5);
    expect((await api('POST', `/app/${app.id}/endpoint`, { url: rx.url(`/${tag}/free`) })).status).toBe(201);
    // All 30 sent at once: one after another took 20 s on a loaded machine, slower than the
    // throttle, which then never held anything back and the two endpoints finished together.
    const t0 = Date.now();
    const sent = await Promise.all(Array.from({ length: 30 }, (_, i) => api('POST', `/app/${app.id}/msg`, { eventType: 'x', payload: { i } })));
    for (const r of sent) expect(r.status).toBe(202);
    await waitFor(() => at(`/${tag}/free`).length === 30, { what: 'the unthrottled endpoint', timeoutMs: 20_000 });
    const freeDone = Math.max(...at(`/${tag}/free`).map((r) => r.at)) - t0;
    await waitFor(() => at(`/${tag}/limited`).length === 30, { what: 'the throttled endpoint', timeoutMs: 30_000 });
    const limited = at(`/${tag}/limited`).map((r) => r.at);
    const first = Math.min(...limited);
    const last = Math.max(...limited);
    // 5 saved up at once, then 25 more at 5/s: 5 s at least (less a scheduling tick).
    expect(last - first, 'ms from the first to the last throttled delivery').toBeGreaterThanOrEqual(4500);
    const busiestSecond = Math.max(...limited.map((s) => limited.filter((x) => x >= s && x < s + 1000).length));
    expect(busiestSecond, 'throttled deliveries in the busiest second').toBeLessThanOrEqual(10);
    expect(freeDone, `the unthrottled endpoint done at +${freeDone} ms, the throttled one at +${last - t0} ms`).toBeLessThan(last - t0);
  }, 60_000);

  it('deleting an endpoint dead-letters its queued webhooks as endpoint_disabled: nothing more is sent to its URL', async () => {
    const tag = uniq('del');
    const app = (await api('POST', '/app', { name: 'Deleted' })).json;
    const url = rx.url(`/${tag}/down/gone`);
    const ep = (await api('POST', `/app/${app.id}/endpoint`, { url })).json;
    const msg = (await api('POST', `/app/${app.id}/msg`, { eventType: 'x', payload: { n: 1 } })).json;
    await waitFor(() => at(`/${tag}/down/gone`).length >= 1, { what: 'the first attempt (503)' });
    const webhookId = f.fleet.apps!.store.table.message(app.id, msg.id)!.deliveries[0]!.webhook_id;
    expect((await api('DELETE', `/app/${app.id}/endpoint/${ep.id}`)).status).toBe(204);
    const auth = { headers: { authorization: `Bearer ${admin}` } };
    const status = await waitFor(
      async () => {
        const s = (await (await fetch(`${f.baseUrl}/webhooks/${webhookId}/status`, auth)).json()) as any;
        return s.state === 'failed' ? s : undefined;
      },
      { what: 'the dead letter', timeoutMs: 20_000 },
    );
    expect(status.dead_reason).toBe('endpoint_disabled');
    expect(status.last_error).toContain('deleted');
    const sent = at(`/${tag}/down/gone`).length;
    await new Promise((r) => setTimeout(r, 1500));
    expect(at(`/${tag}/down/gone`)).toHaveLength(sent);
  }, 40_000);

  it('1,000 endpoints in one application: created in parallel, listed page by page, and one message reaches every one', async () => {
    const tag = uniq('k');
    const app = (await api('POST', '/app', { name: 'Thousand' })).json;
    const N = 1000;
    // Bounded parallel creation: 25 requests in flight at most.
    const created: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 25 }, async () => {
        for (let i = next++; i < N; i = next++) {
          const r = await api('POST', `/app/${app.id}/endpoint`, { url: rx.url(`/${tag}/e${i}`), uid: `e${i}` });
          expect(r.status).toBe(201);
          created.push(r.json.id);
        }
      }),
    );
    expect(new Set(created).size).toBe(N);

    const listed: string[] = [];
    let iterator: string | undefined;
    for (let page = 0; page < 10; page++) {
      const r = await api('GET', `/app/${app.id}/endpoint?limit=250${iterator ? `&iterator=${iterator}` : ''}`);
      expect(r.status).toBe(200);
      listed.push(...r.json.data.map((e: any) => e.id));
      if (r.json.done) break;
      iterator = r.json.iterator;
    }
    expect(listed).toHaveLength(N);
    expect(new Set(listed)).toEqual(new Set(created));

    expect((await api('POST', `/app/${app.id}/msg`, { eventType: 'x', payload: { all: true } })).status).toBe(202);
    const reached = () => new Set(rx.received.filter((r) => r.path.startsWith(`/${tag}/e`)).map((r) => r.path));
    // Bounded waits, not a speed: beside other lanes on a loaded machine the creation alone took
    // most of the former 180 s.
    await waitFor(() => reached().size === N, { what: 'all 1,000 endpoints', timeoutMs: 180_000 });
    expect(rx.received.filter((r) => r.path.startsWith(`/${tag}/e`))).toHaveLength(N);
  }, 420_000);
});

describe('Svix endpoint throttleRate on the embedded adapters (howk-dev)', () => {
  it('an endpoint at 5/s: 15 webhooks take at least ~2 s, never more than 10 in a second', async () => {
    const f = await startTestFleet('memory', { overrides: { 'api.auth.enabled': false, 'rate_limit.rate': 0 } });
    const rx = await startReceiver(() => ({ status: 200 }));
    try {
      await f.fleet.apps!.ready;
      const post = async (path: string, body: unknown) =>
        (await fetch(`${f.baseUrl}/api/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<any>;
      const app = await post('/app', { name: 'Dev' });
      const ep = await post(`/app/${app.id}/endpoint`, { url: rx.url('/dev/limited'), throttleRate: 5 });
      expect(ep.throttleRate).toBe(5);
      for (let i = 0; i < 15; i++) await post(`/app/${app.id}/msg`, { eventType: 'x', payload: { i } });
      await waitFor(() => rx.received.length === 15, { what: 'the 15 webhooks', timeoutMs: 20_000 });
      const ats = rx.received.map((r) => r.at);
      expect(Math.max(...ats) - Math.min(...ats)).toBeGreaterThanOrEqual(1700);
      for (const s of ats) expect(ats.filter((x) => x >= s && x < s + 1000).length).toBeLessThanOrEqual(10);
    } finally {
      await f.stop();
      await rx.close();
    }
  }, 40_000);
});
