import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// GET /webhooks and GET /deadletter page through 1,000 webhooks each on real Kafka + Redis
// (a db of its own): every webhook exactly once, in order, filters applied, cursors stable while new
// webhooks arrive.
describe('delivery and dead-letter listings through 1,000 webhooks', () => {
  const N = 1000;
  let rx: Receiver;
  let f: TestFleet;
  const delivered: string[] = [];
  const dead: string[] = [];

  beforeAll(async () => {
    rx = await startReceiver((r) => (r.path.startsWith('/bad') ? { status: 422, body: 'x'.repeat(3000) } : { status: 200 }));
    f = await startTestFleet('kafka', { overrides: { 'circuit_breaker.enabled': false } });
    for (let b = 0; b < N / 100; b++) {
      for (const [config, path, out] of [
        ['lst-a', '/ok', delivered],
        ['lst-b', '/bad', dead],
      ] as const) {
        const webhooks = Array.from({ length: 100 }, (_, i) => ({
          endpoint: rx.url(`${path}?half=${(b * 100 + i) % 2}`),
          payload: { b, i },
          headers: { authorization: 'Bearer s3cret', 'x-plain': 'v' },
        }));
        const res = await f.post(`/webhooks/${config}/enqueue/batch`, { webhooks });
        expect(res.status).toBe(202);
        out.push(...((await res.json()) as any).results.map((r: any) => r.webhook_id));
      }
    }
  });

  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const get = async (path: string) => {
    const res = await fetch(f.baseUrl + path);
    return { status: res.status, body: (await res.json()) as any };
  };

  const pageAll = async (base: string, from: string | null = null) => {
    const pages: any[][] = [];
    let cursor: string | null = from;
    do {
      const { status, body } = await get(`${base}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(status).toBe(200);
      pages.push(body.items);
      cursor = body.next_cursor;
    } while (cursor !== null && pages.length < 100);
    return pages;
  };

  it('pages the delivery listing newest first, each webhook once, filtered by state and endpoint', async () => {
    await waitFor(async () => (await pageAll('/webhooks?config_id=lst-a&state=delivered&limit=500')).flat().length === N, { timeoutMs: 90_000, what: `${N} delivered` });
    const pages = await pageAll('/webhooks?config_id=lst-a&limit=100');
    expect(pages.slice(0, 10).map((p) => p.length)).toEqual(Array(10).fill(100));
    const ids = pages.flat().map((s) => s.webhook_id);
    expect(ids).toEqual([...delivered].reverse());
    const row = pages[0]![0];
    expect(row).toMatchObject({ config_id: 'lst-a', state: 'delivered', attempts: 1, last_status_code: 200, last_error: null, next_retry_at: null });
    expect(row.updated_at_ns).toBeUndefined();
    const half = (await pageAll(`/webhooks?config_id=lst-a&endpoint=${encodeURIComponent(rx.url('/ok?half=1'))}&limit=70`)).flat();
    expect(half.map((s) => s.webhook_id)).toEqual(delivered.filter((_, i) => i % 2 === 1).reverse());
    const both = (await pageAll(`/webhooks?config_id=lst-a&state=delivered&endpoint=${encodeURIComponent(rx.url('/ok?half=0'))}&limit=200`)).flat();
    expect(both).toHaveLength(N / 2);
    expect((await pageAll('/webhooks?config_id=lst-a&state=retrying&limit=100')).flat()).toEqual([]);
  });

  it('keeps a cursor stable while new webhooks arrive', async () => {
    const first = await get('/webhooks?config_id=lst-a&limit=250');
    const more = await f.post('/webhooks/lst-a/enqueue/batch', { webhooks: Array.from({ length: 20 }, (_, i) => ({ endpoint: rx.url('/ok'), payload: { late: i } })) });
    expect(more.status).toBe(202);
    const rest = (await pageAll('/webhooks?config_id=lst-a&limit=250', first.body.next_cursor)).flat();
    expect([...first.body.items, ...rest].map((s: any) => s.webhook_id)).toEqual([...delivered].reverse());
  });

  it('pages the dead-letter listing oldest first, with reasons, the last response cut to 1 KB and secret headers redacted', async () => {
    await waitFor(async () => (await pageAll('/deadletter?config_id=lst-b&limit=500')).flat().length === N, { timeoutMs: 90_000, what: `${N} dead letters` });
    const pages = await pageAll('/deadletter?config_id=lst-b&limit=100');
    const items = pages.flat();
    expect(new Set(items.map((d) => d.webhook_id))).toEqual(new Set(dead));
    expect(items).toHaveLength(N);
    const times = items.map((d) => Date.parse(d.dead_at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(items[0]).toMatchObject({ config_id: 'lst-b', reason_type: 'unrecoverable', last_status_code: 422 });
    expect(items[0].last_response).toHaveLength(1024);
    expect(items[0].webhook.headers).toEqual({ authorization: '[redacted]', 'x-plain': 'v' });
    expect(items[0].webhook.payload).toBeUndefined();
    expect((await pageAll('/deadletter?config_id=lst-b&reason_type=unrecoverable&limit=300')).flat()).toHaveLength(N);
    expect((await pageAll('/deadletter?config_id=lst-b&reason_type=exhausted&limit=300')).flat()).toEqual([]);
    const mid = items[N / 2]!.dead_at as string;
    const since = (await pageAll(`/deadletter?config_id=lst-b&since=${encodeURIComponent(mid)}&limit=300`)).flat();
    expect(since.length).toBeGreaterThanOrEqual(N / 2);
    expect(since.every((d) => d.dead_at >= mid)).toBe(true);
  });

  it('names the bad parameter', async () => {
    expect((await get('/webhooks')).body.error).toMatchObject({ code: 'invalid_request', field: 'config_id' });
    expect((await get('/webhooks?config_id=lst-a&state=lost')).body.error.field).toBe('state');
    expect((await get('/deadletter?config_id=lst-b&since=soon')).status).toBe(400);
  });
});
