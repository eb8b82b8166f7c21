import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { useRedisDb } from '../helpers/redis-db';

// An endpoint's own delivery policy (Howk's fields timeoutMs, maxBackoffMs, maxConcurrency)
// on real Kafka + Redis: each overrides the global setting, read at each attempt, so a change
// reaches the webhooks already queued.

describe('Svix endpoint delivery policy (Kafka + Redis)', () => {
  const db = useRedisDb();
  let f: TestFleet;
  let rx: Receiver;
  let admin: string;

  beforeAll(async () => {
    // The global backoff has no jitter (its steps are known), and webhooks of one application may
    // go in parallel (per_key_parallelism): only an endpoint's ceiling holds them back.
    f = await startTestFleet('kafka', {
      redisDb: db(),
      overrides: { 'api.auth.enabled': true, 'rate_limit.rate': 0, 'retry.base_delay': '1s', 'retry.jitter': 0, 'circuit_breaker.enabled': false, 'kafka.per_key_parallelism': 8 },
    });
    await Promise.all([f.fleet.security!.ready, f.fleet.apps!.ready]);
    admin = (await f.fleet.security!.keys!.create({ scopes: ['admin'] })).key;
    rx = await startReceiver((r, nth) => {
      if (r.path.includes('/down/')) return { status: 503 };
      // The first attempt fails at once; the next ones hang for 3 s and then succeed.
      if (r.path.includes('/hang/')) return nth === 1 ? { status: 503 } : { status: 200, delayMs: 3000 };
      return { status: 200 };
    });
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
  const statusOf = async (webhookId: string) => (await (await fetch(`${f.baseUrl}/webhooks/${webhookId}/status`, { headers: { authorization: `Bearer ${admin}` } })).json()) as any;
  const at = (path: string) => rx.received.filter((r) => r.path === path);

  it('refuses bad values with a 422 naming the field, and stores nothing', async () => {
    const app = (await api('POST', '/app', { name: 'Bad policy' })).json;
    const url = rx.url('/bad');
    for (const [field, value] of [
      ['timeoutMs', 5],
      ['timeoutMs', 300_001],
      ['timeoutMs', 'soon'],
      ['maxBackoffMs', 10],
      ['maxBackoffMs', 1.5],
      ['maxConcurrency', 0],
      ['maxConcurrency', 1001],
    ] as const) {
      const r = await api('POST', `/app/${app.id}/endpoint`, { url, [field]: value });
      expect(r.status, `${field}=${value}`).toBe(422);
      expect(r.json.detail.map((x: any) => x.loc.join('.'))).toContain(`body.${field}`);
    }
    expect((await api('GET', `/app/${app.id}/endpoint`)).json.data).toHaveLength(0);
    const ok = await api('POST', `/app/${app.id}/endpoint`, { url, timeoutMs: 2000, maxBackoffMs: 5000, maxConcurrency: 3 });
    expect(ok.status).toBe(201);
    expect(ok.json).toMatchObject({ timeoutMs: 2000, maxBackoffMs: 5000, maxConcurrency: 3 });
    const put = await api('PUT', `/app/${app.id}/endpoint/${ok.json.id}`, { url, maxConcurrency: -1 });
    expect(put.status).toBe(422);
    expect((await api('GET', `/app/${app.id}/endpoint/${ok.json.id}`)).json).toMatchObject({ timeoutMs: 2000, maxBackoffMs: 5000, maxConcurrency: 3 });
  });

  it('timeoutMs set after the message was queued cuts its next attempt short (3 s hang, 300 ms timeout)', async () => {
    const tag = uniq('to');
    const app = (await api('POST', '/app', { name: 'Timeout' })).json;
    const url = rx.url(`/${tag}/hang/x`);
    const ep = (await api('POST', `/app/${app.id}/endpoint`, { url, maxAttempts: 2 })).json;
    const msg = (await api('POST', `/app/${app.id}/msg`, { eventType: 'x', payload: { n: 1 } })).json;
    await waitFor(() => at(`/${tag}/hang/x`).length >= 1, { what: 'the first attempt (503)' });
    // The webhook waits for its retry (1 s): the policy it meets then is the new one.
    expect((await api('PUT', `/app/${app.id}/endpoint/${ep.id}`, { url, maxAttempts: 2, timeoutMs: 300 })).status).toBe(200);
    const webhookId = f.fleet.apps!.store.table.message(app.id, msg.id)!.deliveries[0]!.webhook_id;
    const s = await waitFor(async () => ((await statusOf(webhookId)).state === 'exhausted' ? statusOf(webhookId) : undefined), { what: 'the dead letter', timeoutMs: 15_000 });
    expect(s.attempts).toBe(2);
    expect(s.last_error).toMatch(/timeout/i);
    expect(s.history.at(-1).duration_ms).toBeLessThan(2000);
  }, 30_000);

  it('maxBackoffMs caps the backoff: 4 attempts in a few seconds where the global backoff needs 7 s', async () => {
    const tag = uniq('bo');
    const app = (await api('POST', '/app', { name: 'Backoff' })).json;
    // Global: 1 s, 2 s, 4 s between the attempts. The endpoint's cap: 1 s each.
    expect((await api('POST', `/app/${app.id}/endpoint`, { url: rx.url(`/${tag}/down/x`), maxAttempts: 4, maxBackoffMs: 1000 })).status).toBe(201);
    const t0 = Date.now();
    expect((await api('POST', `/app/${app.id}/msg`, { eventType: 'x', payload: { n: 1 } })).status).toBe(202);
    await waitFor(() => at(`/${tag}/down/x`).length === 4, { what: 'four attempts', timeoutMs: 20_000 });
    const times = at(`/${tag}/down/x`).map((r) => r.at);
    for (let i = 1; i < 4; i++) expect(times[i]! - times[i - 1]!).toBeLessThan(1900);
    expect(times[3]! - t0).toBeLessThan(6500);
  }, 30_000);

  it('maxConcurrency 2: never more than 2 deliveries of the endpoint in flight, all delivered', async () => {
    const slow = await startReceiver(() => ({ status: 200, delayMs: 800 }));
    try {
      const app = (await api('POST', '/app', { name: 'Ceiling' })).json;
      expect((await api('POST', `/app/${app.id}/endpoint`, { url: slow.url('/cc'), maxConcurrency: 2 })).json.maxConcurrency).toBe(2);
      const sent = await Promise.all(Array.from({ length: 16 }, (_, i) => api('POST', `/app/${app.id}/msg`, { eventType: 'x', payload: { i } })));
      expect(sent.map((r) => r.status)).toEqual(Array(16).fill(202));
      await waitFor(() => slow.received.length === 16, { what: 'the 16 webhooks', timeoutMs: 30_000 });
      expect(slow.maxInflight()).toBeLessThanOrEqual(2);
      expect(slow.maxInflight()).toBe(2);
    } finally {
      await slow.close();
    }
  }, 45_000);
});
