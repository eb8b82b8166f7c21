import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeWebhook } from '../../core/records/webhook';
import { uniq, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

type Answer = { status: number; body: { webhook_id?: string; status?: string; error?: { code: string; message: string } } };

// One idempotency for every door: two howk-api instances on the same Redis and Kafka (the
// first also runs the worker) see each other's keys, and a key reused for another request is
// refused, not answered as a duplicate.
describe('idempotency across two howk-api instances', () => {
  let a: TestFleet;
  let b: TestFleet;
  let rx: Receiver;

  beforeAll(async () => {
    rx = await startReceiver();
    a = await startTestFleet('kafka');
    b = await startTestFleet('kafka', { config: a.config, redisDb: a.redisDb, roles: { api: true, worker: false, scheduler: false } });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
    await rx?.close();
  });

  const send = async (f: TestFleet, body: unknown, path = '/webhooks/doors/enqueue'): Promise<Answer> => {
    const res = await f.post(path, body);
    return { status: res.status, body: (await res.json()) as Answer['body'] };
  };
  const recordsWith = (needle: string) => a.records('pending').filter((r) => r.value?.includes(needle));

  it('makes one webhook, delivered once, of the same key sent to both instances at once', async () => {
    const key = uniq('both');
    const body = { endpoint: rx.url(`/doors/${key}`), payload: { key }, idempotency_key: key };
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => send(i % 2 ? b : a, body)));
    const ids = new Set(answers.map((r) => r.body.webhook_id));
    expect(ids.size).toBe(1);
    expect(answers.filter((r) => r.status === 202 && r.body.status === 'pending')).toHaveLength(1);
    expect(answers.filter((r) => r.status === 200 && r.body.status === 'duplicate')).toHaveLength(9);
    const [id] = [...ids];
    await waitFor(() => rx.received.some((r) => r.headers['webhook-id'] === id), { what: 'the delivery' });
    // Later copies through either door still answer the first webhook.
    expect((await send(b, body)).body).toEqual({ webhook_id: id, status: 'duplicate' });
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.received.filter((r) => r.path === `/doors/${key}`)).toHaveLength(1);
    expect(recordsWith(key).map((r) => decodeWebhook(r.value!).id)).toEqual([id]);
  });

  it('refuses the key with another body, endpoint or header on the other instance: 409, nothing enqueued', async () => {
    const key = uniq('conflict');
    const body = { endpoint: rx.url(`/doors/${key}`), payload: { key, n: 1 }, headers: { 'X-Kind': 'a' }, idempotency_key: key };
    const first = await send(a, body);
    expect(first.status).toBe(202);
    for (const other of [
      { ...body, payload: { key, n: 2 } },
      { ...body, endpoint: rx.url(`/doors/${key}/other`) },
      { ...body, headers: { 'X-Kind': 'b' } },
    ]) {
      const r = await send(b, other);
      expect(r.status).toBe(409);
      expect(r.body.error?.code).toBe('idempotency_key_conflict');
      expect(r.body.error?.message).toContain(key);
      expect(r.body.error?.message).toContain(first.body.webhook_id);
    }
    // In a batch, one conflicting item refuses the whole batch, its other items included.
    const fresh = uniq('fresh');
    const batch = await send(
      b,
      {
        webhooks: [
          { endpoint: rx.url(`/doors/${fresh}`), payload: { fresh }, idempotency_key: fresh },
          { ...body, payload: { key, n: 3 } },
        ],
      },
      '/webhooks/doors/enqueue/batch',
    );
    expect(batch.status).toBe(409);
    expect(batch.body.error?.code).toBe('idempotency_key_conflict');
    // The same body (header names in another case) is still the first webhook's duplicate; the batch's fresh key was given back.
    expect((await send(b, { ...body, headers: { 'x-kind': 'a' } })).body).toEqual({ webhook_id: first.body.webhook_id, status: 'duplicate' });
    const again = await send(a, { endpoint: rx.url(`/doors/${fresh}`), payload: { fresh }, idempotency_key: fresh });
    expect(again.status).toBe(202);
    await waitFor(() => rx.received.filter((r) => r.path.startsWith(`/doors/${key}`)).length >= 1 && rx.received.some((r) => r.path === `/doors/${fresh}`), { what: 'deliveries' });
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.received.filter((r) => r.path.startsWith(`/doors/${key}`)).map((r) => JSON.parse(r.body.toString()))).toEqual([{ key, n: 1 }]);
    expect(recordsWith(key)).toHaveLength(1);
    expect(recordsWith(fresh)).toHaveLength(1);
  });
});
