import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installTransformers } from '../fixtures/transformers/install';
import { waitFor } from '../helpers/env';
import { startTestFleet, type Mode, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Tenants choose their config ids, and ':' is allowed in them: what one tenant keeps in Redis
// (idempotency claims, Lua kv) must never be reachable by a config id or transformer name
// that joins to the same text. Through the API, on real Kafka + Redis (a db of its own) and embedded.

describe.each<[Mode]>([['kafka'], ['memory']])('tenant isolation of Redis state (%s)', (mode) => {
  let f: TestFleet;
  let rx: Receiver;
  let fx: Awaited<ReturnType<typeof installTransformers>>;
  beforeAll(async () => {
    rx = await startReceiver();
    fx = await installTransformers(rx.url('').replace(/\/$/, ''), {
      // A transformer that leaves a value in its kv and enqueues nothing.
      'kvprobe.lua': `assert(kv.set('seen', 'transformer'))`,
      'kvprobe.json': '{ "allowed_domains": ["127.0.0.1"] }',
    });
    f = await startTestFleet(mode, { overrides: { 'transformer.script_dirs': [fx.dir] } });
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    await fx?.remove();
  });

  const enqueue = async (config: string, body: object) => {
    const res = await f.post(`/webhooks/${config}/enqueue`, body);
    return { http: res.status, ...((await res.json()) as { webhook_id: string; status: string }) };
  };
  const putScript = async (config: string, code: string, applyToChildren = false) => {
    const res = await fetch(`${f.baseUrl}/config/${encodeURIComponent(config)}/script?apply_to_children=${applyToChildren}`, {
      method: 'PUT',
      headers: { 'content-type': 'text/plain' },
      body: code,
    });
    expect(res.status).toBe(200);
  };
  const received = (id: string) => waitFor(() => rx.received.find((r) => r.headers['webhook-id'] === id), { what: `delivery of ${id}` });

  it('idempotency: tenantA:x + "order-1" and tenantA + "x:order-1" are both accepted and both delivered', async () => {
    const a = await enqueue('tenantA:x', { endpoint: rx.url('/idem-a'), payload: { who: 'tenantA:x' }, idempotency_key: 'order-1' });
    const b = await enqueue('tenantA', { endpoint: rx.url('/idem-b'), payload: { who: 'tenantA' }, idempotency_key: 'x:order-1' });
    expect([a.http, a.status, b.http, b.status]).toEqual([202, 'pending', 202, 'pending']);
    expect(b.webhook_id).not.toBe(a.webhook_id);
    // Each key still dedupes its own config.
    const again = await enqueue('tenantA', { endpoint: rx.url('/idem-b'), payload: { who: 'tenantA' }, idempotency_key: 'x:order-1' });
    expect([again.http, again.status, again.webhook_id]).toEqual([200, 'duplicate', b.webhook_id]);
    const [ra, rb] = [await received(a.webhook_id), await received(b.webhook_id)];
    expect([ra.path, rb.path]).toEqual(['/idem-a', '/idem-b']);
  });

  it("kv: a config named like a transformer does not see the transformer's kv", async () => {
    const t = await f.post('/incoming/kvprobe', '{}');
    expect(t.status).toBe(200);
    await putScript('kvprobe', `request.headers['x-seen'] = tostring(kv.get('seen'))`);
    const w = await enqueue('kvprobe', { endpoint: rx.url('/kv-probe'), payload: {} });
    expect(w.http).toBe(202);
    expect((await received(w.webhook_id)).headers['x-seen']).toBe('nil');
  });

  it("kv: a child config (wh:42) runs its parent's script but has its own kv", async () => {
    // The parent writes "42:k"; its child reads "k": joined with ':' both were kv:wh:42:k.
    await putScript(
      'wh',
      `if webhook.config_id == 'wh' then kv.set('42:k', 'parent') end
request.headers['x-k'] = tostring(kv.get('k')) .. '/' .. tostring(kv.get('42:k'))`,
      true,
    );
    const parent = await enqueue('wh', { endpoint: rx.url('/kv-parent'), payload: {} });
    expect((await received(parent.webhook_id)).headers['x-k']).toBe('nil/parent');
    const child = await enqueue('wh:42', { endpoint: rx.url('/kv-child'), payload: {} });
    expect((await received(child.webhook_id)).headers['x-k']).toBe('nil/nil');
  });
});
