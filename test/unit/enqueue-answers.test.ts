import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchAnswer } from '../../core/http/routes/enqueue';
import type { ItemView } from '../../core/http/routes/enqueue-wait';
import { decodeWebhook } from '../../core/records/webhook';
import { startTestFleet, type TestFleet } from '../helpers/fleet';

// The batch enqueue answer is written out by hand on the common path (no wait): it must be
// the JSON a client always got, byte for byte, whatever the endpoints and ids hold.

/** What the route answered before it wrote the text itself. */
const stringified = (items: ItemView[], accepted: number) => JSON.stringify({ count: items.length, accepted, results: items.map((r, index) => ({ index, ...r })) });

describe('batchAnswer', () => {
  it('is the stringified answer for new webhooks, duplicates and endpoints that need escaping', () => {
    const items: ItemView[] = [
      { webhook_id: 'wh_01JD0000000000000000000000', status: 'pending', endpoint: 'https://a.example/h' },
      { webhook_id: 'wh_01JD0000000000000000000001', status: 'pending', endpoint: 'https://a.example/h' },
      { webhook_id: 'from "another" writer\\', status: 'duplicate', endpoint: 'https://b.example/p?q="x"&e=é\u2028' },
      { webhook_id: 'wh_01JD0000000000000000000002', status: 'pending', endpoint: 'https://a.example/h' },
    ];
    expect(batchAnswer(items, 3, false)).toBe(stringified(items, 3));
    expect(batchAnswer(items.slice(0, 1), 1, false)).toBe(stringified(items.slice(0, 1), 1));
  });

  it('keeps the first-attempt outcomes of an answer that waited', () => {
    const items: ItemView[] = [
      {
        webhook_id: 'wh_01JD0000000000000000000000',
        status: 'delivered',
        endpoint: 'https://a.example/h',
        outcome: { attempts: 1, status_code: 200, error: null, next_retry_at: null, dead_reason: null },
      },
      { webhook_id: 'wh_01JD0000000000000000000001', status: 'pending', endpoint: 'https://a.example/h' },
    ];
    expect(JSON.parse(batchAnswer(items, 2, true))).toEqual(JSON.parse(stringified(items, 2)));
  });
});

describe('POST /webhooks/:config/enqueue/batch answer', () => {
  let f: TestFleet;
  beforeAll(async () => {
    f = await startTestFleet('memory', { roles: { api: true, worker: false, scheduler: false } });
  });
  afterAll(() => f?.stop());

  it('lists each item with its index, id, status and endpoint as JSON, the records matching', async () => {
    const odd = 'http://127.0.0.1:9/q?name="x"&city=Zürich';
    const webhooks = [
      { endpoint: 'http://127.0.0.1:9/a', payload: { n: 1 }, idempotency_key: 'same' },
      { endpoint: odd, payload: [2] },
      // The same request under the same key: a duplicate (another body would be a 409 conflict).
      { endpoint: 'http://127.0.0.1:9/a', payload: { n: 1 }, idempotency_key: 'same' },
    ];
    const res = await f.post('/webhooks/answers/enqueue/batch', { webhooks });
    expect(res.status).toBe(202);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const text = await res.text();
    const body = JSON.parse(text) as { count: number; accepted: number; results: ItemView[] };
    expect(body.count).toBe(3);
    expect(body.accepted).toBe(2);
    expect(body.results.map((r) => [r.status, r.endpoint])).toEqual([
      ['pending', 'http://127.0.0.1:9/a'],
      ['pending', odd],
      ['duplicate', 'http://127.0.0.1:9/a'],
    ]);
    expect(body.results.map((r) => (r as { index?: number }).index)).toEqual([0, 1, 2]);
    expect(body.results[2]!.webhook_id).toBe(body.results[0]!.webhook_id);
    expect(text).toBe(
      stringified(
        body.results.map(({ index: _i, ...r }: ItemView & { index?: number }) => r),
        2,
      ),
    );
    const records = f.records('pending').map((r) => decodeWebhook(r.value!));
    expect(records.map((w) => [w.id, w.endpoint])).toEqual([
      [body.results[0]!.webhook_id, 'http://127.0.0.1:9/a'],
      [body.results[1]!.webhook_id, odd],
    ]);
  });
});
