import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { TEST_SECRET, startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';

// Retry vs replay (docs/RELIABILITY.md) on real Kafka + Redis (a db of its own): POST /webhooks/:id/retry is a
// new attempt of the same webhook; POST /deadletter/:id/replay is a new webhook recording
// replay_of, and the original - status, history, dead letter - never changes.
describe('retry and replay', () => {
  let rx: Receiver;
  let f: TestFleet;
  const fixed = new Set<string>();
  const PAYLOAD = '{"order": 42, "amount": 10.50, "big": 123456789012345678901234567890}';

  beforeAll(async () => {
    // An endpoint refuses (400) until the test "fixes" it; /slow always answers 503.
    rx = await startReceiver((r) => (r.path === '/slow' ? { status: 503 } : fixed.has(r.path) ? { status: 200 } : { status: 400, body: 'bad customer' }));
    f = await startTestFleet('kafka', { overrides: { 'circuit_breaker.enabled': false, 'retry.base_delay': 100 } });
  });

  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const enqueue = async (path: string, extra: Record<string, unknown> = {}) => {
    const body = `{"endpoint": ${JSON.stringify(rx.url(path))}, "payload": ${PAYLOAD}, "headers": {"authorization": "Bearer s3cret", "x-plain": "p"}${Object.entries(extra)
      .map(([k, v]) => `, ${JSON.stringify(k)}: ${JSON.stringify(v)}`)
      .join('')}}`;
    const res = await f.post('/webhooks/rr/enqueue', body);
    expect(res.status).toBe(202);
    return ((await res.json()) as any).webhook_id as string;
  };
  const status = async (id: string) => (await (await fetch(`${f.baseUrl}/webhooks/${id}/status`)).json()) as any;
  const deadLetter = async (id: string) => (await fetch(`${f.baseUrl}/deadletter/${id}`)).text();
  const until = (id: string, state: string) => waitFor(async () => (await status(id)).state === state, { timeoutMs: 30_000, what: `${id} ${state}` });
  const requestsFor = (id: string) => rx.received.filter((r) => r.headers['webhook-id'] === id);
  /** Waits until webhook `id` is in `state` and its dead letter can be read back. */
  const deadLettered = async (id: string, state = 'failed') => {
    await until(id, state);
    await waitFor(async () => (await fetch(`${f.baseUrl}/deadletter/${id}`)).status === 200, { what: 'dead letter indexed' });
  };

  it('retry: a new attempt of the same webhook, attempt number going on, history kept', async () => {
    const id = await enqueue('/r1');
    await deadLettered(id);
    fixed.add('/r1');
    const res = await f.post(`/webhooks/${id}/retry`, { headers: { authorization: 'Bearer s3cret' } });
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/webhooks/${id}/status`);
    expect(await res.json()).toEqual({ webhook_id: id, status: 'pending', attempt: 2, dropped_headers: [] });
    await until(id, 'delivered');
    const reqs = requestsFor(id);
    expect(reqs.map((r) => r.headers['x-webhook-attempt'])).toEqual(['1', '2']);
    // The bytes enqueued are the bytes sent, and signed, on the retry too.
    expect(reqs[1]!.body.toString()).toBe(PAYLOAD);
    expect(verifyStandardWebhook(TEST_SECRET, reqs[1]!.headers as any, reqs[1]!.body)).toBe(true);
    expect(reqs[1]!.headers.authorization).toBe('Bearer s3cret');
    const s = await status(id);
    expect(s).toMatchObject({ state: 'delivered', attempts: 2 });
    expect(s.history.map((h: any) => h.outcome)).toEqual(['unrecoverable', 'delivered']);
  });

  it('retry drops headers the dead letter only kept redacted, and says which', async () => {
    const id = await enqueue('/r2');
    await deadLettered(id);
    fixed.add('/r2');
    const res = await f.post(`/webhooks/${id}/retry`, '');
    expect(((await res.json()) as any).dropped_headers).toEqual(['authorization']);
    await until(id, 'delivered');
    const last = requestsFor(id).at(-1)!;
    expect(last.headers.authorization).toBeUndefined();
    expect(last.headers['x-plain']).toBe('p');
  });

  it('retry refuses what is not at an end (409), what has no body left (409) and what does not exist (404)', async () => {
    const slow = await enqueue('/slow', { max_attempts: 50 });
    await until(slow, 'retrying');
    const busy = await f.post(`/webhooks/${slow}/retry`, {});
    expect(busy.status).toBe(409);
    expect(((await busy.json()) as any).error.code).toBe('not_terminal');
    fixed.add('/r3');
    const ok = await enqueue('/r3');
    await until(ok, 'delivered');
    const gone = await f.post(`/webhooks/${ok}/retry`, {});
    expect(gone.status).toBe(409);
    expect(((await gone.json()) as any).error.code).toBe('body_unavailable');
    expect((await f.post('/webhooks/wh_01NOSUCHWEBHOOK000000000000/retry', {})).status).toBe(404);
    expect((await f.post(`/webhooks/${ok}/retry`, { attempts: 0 })).status).toBe(400);
  });

  it('two retries of the same attempt at once: one goes, the other is told it is under way', async () => {
    const id = await enqueue('/r4');
    await deadLettered(id);
    const codes = (await Promise.all([f.post(`/webhooks/${id}/retry`, {}), f.post(`/webhooks/${id}/retry`, {})])).map((r) => r.status).sort();
    expect(codes).toEqual([202, 409]);
  });

  it('retry with attempts: n makes up to n attempts, then dead-letters again', async () => {
    const id = await enqueue('/slow', { max_attempts: 1 });
    await deadLettered(id, 'exhausted');
    expect((await f.post(`/webhooks/${id}/retry`, { attempts: 3 })).status).toBe(202);
    await waitFor(async () => (await status(id)).state === 'exhausted' && (await status(id)).attempts === 4, { timeoutMs: 30_000, what: 'exhausted again after 3 more attempts' });
    expect(requestsFor(id).map((r) => r.headers['x-webhook-attempt'])).toEqual(['1', '2', '3', '4']);
    expect(JSON.parse(await deadLetter(id)).webhook.attempt).toBe(3);
  });

  it('replay: a new webhook recording replay_of; the original, its history and its dead letter never change', async () => {
    const id = await enqueue('/p1');
    await deadLettered(id);
    const [statusBefore, dlBefore] = [await status(id), await deadLetter(id)];
    fixed.add('/p1');
    const res = await f.post(`/deadletter/${id}/replay`, { headers: { authorization: 'Bearer again' }, idempotency_key: 'replay-p1' });
    expect(res.status).toBe(202);
    const r = (await res.json()) as any;
    expect(r).toMatchObject({ status: 'pending', replay_of: id, dropped_headers: [] });
    expect(r.webhook_id).not.toBe(id);
    expect(res.headers.get('location')).toBe(`/webhooks/${r.webhook_id}/status`);
    await until(r.webhook_id, 'delivered');
    expect(await status(r.webhook_id)).toMatchObject({ replay_of: id, attempts: 1 });
    const sent = requestsFor(r.webhook_id)[0]!;
    expect(sent.body.toString()).toBe(PAYLOAD);
    expect(sent.headers.authorization).toBe('Bearer again');
    expect(sent.headers['x-webhook-attempt']).toBe('1');
    // A repeated replay with the same key is the first one.
    const again = await f.post(`/deadletter/${id}/replay`, { idempotency_key: 'replay-p1' });
    expect(again.status).toBe(200);
    expect((await again.json()) as any).toMatchObject({ webhook_id: r.webhook_id, status: 'duplicate' });
    // The original is as it was.
    expect(await status(id)).toEqual(statusBefore);
    expect(await deadLetter(id)).toBe(dlBefore);
    expect(requestsFor(id)).toHaveLength(1);
    expect((await f.post('/deadletter/wh_01NOSUCHWEBHOOK000000000000/replay', {})).status).toBe(404);
    expect((await f.post(`/deadletter/${id}/replay`, { surprise: 1 })).status).toBe(400);
  });

  it('GET /deadletter/:id returns the record with the payload bytes as enqueued', async () => {
    const id = await enqueue('/p2');
    await deadLettered(id);
    const text = await deadLetter(id);
    expect(text).toContain(`"payload":${PAYLOAD}`);
    expect(JSON.parse(text)).toMatchObject({ webhook_id: id, reason_type: 'unrecoverable', last_status_code: 400, last_response: 'bad customer' });
  });
});
