import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { startTestFleet, TEST_SECRET, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';

// The SSRF guard end to end on Kafka + Redis. Only loopback is ever targeted: a receiver on
// 127.0.0.1, reached by IP and by the name `localhost`.
describe('SSRF guard end to end (Kafka + Redis)', () => {
  let rx: Receiver;
  let f: TestFleet | undefined;
  beforeAll(async () => {
    rx = await startReceiver();
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const targets = () => {
    const url = new URL(rx.url('/x'));
    return { ip: `http://127.0.0.1:${url.port}/by-ip`, name: `http://localhost:${url.port}/by-name`, mapped: `http://[::ffff:127.0.0.1]:${url.port}/by-mapped` };
  };

  it('refuses a loopback receiver, a name resolving to loopback and a mapped form by default, and dead-letters them as blocked_destination', async () => {
    f = await startTestFleet('kafka', { overrides: { 'delivery.allowed_networks': [] } });
    const t = targets();
    const ids: string[] = [];
    for (const endpoint of [t.ip, t.name, t.mapped]) {
      const res = await f.post('/webhooks/ssrf/enqueue', { endpoint, payload: { endpoint } });
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as any).webhook_id);
    }
    const dls = await waitFor(
      () => {
        const d = f!.records('deadletter').map((r) => JSON.parse(r.value!));
        return d.length >= 3 ? d : undefined;
      },
      { what: 'three dead letters' },
    );
    for (const id of ids) {
      const dl = dls.find((d: any) => d.webhook_id === id);
      expect(dl?.reason_type, id).toBe('blocked_destination');
      expect(dl?.last_error).toMatch(/blocked: .*(loopback|refused)/);
      const s = (await (await fetch(`${f.baseUrl}/webhooks/${id}/status`)).json()) as any;
      expect(s.state).toBe('failed');
      expect(s.dead_reason).toBe('blocked_destination');
      expect(s.attempts).toBe(1);
    }
    expect(rx.received).toHaveLength(0);
    await f.stop();
    f = undefined;
  });

  it('delivers to the same targets once delivery.allowed_networks allows loopback', async () => {
    f = await startTestFleet('kafka', { overrides: { 'delivery.allowed_networks': ['127.0.0.0/8', '::1/128'] } });
    const t = targets();
    for (const endpoint of [t.ip, t.name, t.mapped]) expect((await f.post('/webhooks/ssrf/enqueue', { endpoint, payload: { ok: true } })).status).toBe(202);
    await waitFor(() => rx.received.length >= 3, { what: 'three deliveries' });
    expect(rx.received.map((r) => r.path).sort()).toEqual(['/by-ip', '/by-mapped', '/by-name']);
    for (const r of rx.received) expect(verifyStandardWebhook(TEST_SECRET, r.headers as any, r.body)).toBe(true);
    expect(f.records('deadletter')).toHaveLength(0);
  });
});
