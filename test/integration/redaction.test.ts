import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Secrets a tenant put in headers (any secret-looking name, not a fixed list) and in the
// endpoint URL (userinfo, query values) never show in status, listings or dead letters, on
// real Kafka + Redis (a db of its own). Deliveries still go to the real URL.

const SECRETS = ['xa-secret-1', 'sess-secret-2', 'q-token-3', 'pw-secret-4', 'sig-5'];

describe('redaction in status, listings and dead letters (kafka)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let ids: { query: string; userinfo: string };
  beforeAll(async () => {
    rx = await startReceiver(() => ({ status: 422, body: 'no' }));
    f = await startTestFleet('kafka', { overrides: { 'circuit_breaker.enabled': false } });
    const port = new URL(rx.url()).port;
    const enqueue = async (endpoint: string, headers: Record<string, string> = {}) => {
      const res = await f.post('/webhooks/redact-a/enqueue', { endpoint, payload: { p: 1 }, headers, max_attempts: 1 });
      expect(res.status).toBe(202);
      return ((await res.json()) as { webhook_id: string }).webhook_id;
    };
    ids = {
      query: await enqueue(`http://127.0.0.1:${port}/dead?token=q-token-3&page=2&s=sig-5`, { 'X-Auth': 'xa-secret-1', 'X-Session': 'sess-secret-2', 'X-Plain': 'visible' }),
      userinfo: await enqueue(`http://user:pw-secret-4@127.0.0.1:${port}/dead`),
    };
    await waitFor(
      async () => {
        const s = await Promise.all(Object.values(ids).map(async (id) => ((await (await fetch(`${f.baseUrl}/webhooks/${id}/status`)).json()) as { state: string }).state));
        return s.every((x) => x === 'failed' || x === 'exhausted');
      },
      { timeoutMs: 60_000, what: 'both webhooks dead' },
    );
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const text = async (path: string) => {
    const res = await fetch(f.baseUrl + path);
    expect(res.status).toBe(200);
    return res.text();
  };
  const noSecret = (body: string) => {
    for (const s of SECRETS) expect(body, `"${s}" shown`).not.toContain(s);
  };

  it('delivers to the real URL (the query token reached the receiver)', () => {
    expect(rx.received.some((r) => r.path.includes('token=q-token-3'))).toBe(true);
  });

  it('status shows the endpoint with userinfo and every query value redacted', async () => {
    const q = await text(`/webhooks/${ids.query}/status`);
    noSecret(q);
    expect(JSON.parse(q).endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/dead\?token=\[redacted\]&page=\[redacted\]&s=\[redacted\]$/);
    const u = await text(`/webhooks/${ids.userinfo}/status`);
    noSecret(u);
    expect(JSON.parse(u).endpoint).toMatch(/^http:\/\/\[redacted\]@127\.0\.0\.1:\d+\/dead$/);
  });

  it('the webhook listing shows no secret', async () => {
    const body = await text('/webhooks?config_id=redact-a&limit=10');
    noSecret(body);
    expect(JSON.parse(body).items).toHaveLength(2);
  });

  it('dead letters (listing and one) mask X-Auth and X-Session by pattern and redact the endpoint; other headers stay', async () => {
    const list = await text('/deadletter?config_id=redact-a');
    noSecret(list);
    const items = JSON.parse(list).items as { webhook: { webhook_id?: string; id: string; headers: Record<string, string> } }[];
    expect(items).toHaveLength(2);
    const q = items.find((i) => i.webhook.id === ids.query)!;
    expect(q.webhook.headers).toMatchObject({ 'X-Auth': '[redacted]', 'X-Session': '[redacted]', 'X-Plain': 'visible' });
    for (const id of Object.values(ids)) {
      const one = await text(`/deadletter/${id}`);
      noSecret(one);
      expect(JSON.parse(one).webhook.payload).toEqual({ p: 1 });
    }
  });
});
