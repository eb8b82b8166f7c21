import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { decodeWebhook } from '../../core/records/webhook';
import { uniq, waitFor } from '../helpers/env';
import { TEST_SECRET, startTestFleet, type Mode, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';

// Raw bodies: an enqueue carries bytes that are not JSON (body_base64 + content_type); they
// are delivered byte for byte with their Content-Type and signed over exactly those bytes,
// on Kafka + Redis and in the embedded (in-memory) mode alike, retries and replays included.

/** CSV with CRLF line ends, a Latin-1 é and a 0xff byte: bytes JSON text could not carry. */
const CSV = Buffer.concat([Buffer.from('id,name\r\n1,caf', 'latin1'), Buffer.from([0xe9]), Buffer.from('\r\n2,"a ""b"""\r\n'), Buffer.from([0xff])]);
const TYPE = 'text/csv; charset=iso-8859-1';
const LIMIT = 4096;

for (const mode of ['kafka', 'memory'] as Mode[]) {
  describe(`raw bodies (${mode})`, () => {
    let f: TestFleet;
    let rx: Receiver;
    // The first attempt at /flaky/* fails, so the retry's body is checked too; /dead/* always fails.
    beforeAll(async () => {
      rx = await startReceiver((r, nth) => ({ status: r.path.startsWith('/dead/') || (r.path.startsWith('/flaky/') && nth === 1) ? 500 : 200 }));
      f = await startTestFleet(mode, { overrides: { 'api.max_request_size': LIMIT, 'signing.scheme': 'both' } });
    });
    afterAll(async () => {
      await f?.stop();
      await rx?.close();
    });

    const delivered = (path: string) => rx.received.filter((r) => r.path === path);
    const recordsWith = (needle: string) => f.records('pending').filter((r) => r.value?.includes(needle));

    it('delivers the bytes exactly, with their Content-Type and signatures over those bytes, on the first attempt and a retry', async () => {
      const path = `/flaky/${uniq('csv')}`;
      const res = await f.post('/webhooks/raw/enqueue', { endpoint: rx.url(path), body_base64: CSV.toString('base64'), content_type: TYPE, headers: { 'X-Batch': '7' } });
      expect(res.status).toBe(202);
      const { webhook_id: id } = (await res.json()) as { webhook_id: string };
      const [record] = recordsWith(id).map((r) => decodeWebhook(r.value!));
      expect(record).toMatchObject({ body_base64: CSV.toString('base64'), content_type: TYPE, payload: 'null' });
      await waitFor(() => delivered(path).length >= 2, { what: 'the first attempt and its retry' });
      for (const got of delivered(path)) {
        expect(got.body.equals(CSV)).toBe(true);
        expect(got.headers['content-type']).toBe(TYPE);
        expect(got.headers['x-batch']).toBe('7');
        expect(verifyStandardWebhook(TEST_SECRET, got.headers, got.body)).toBe(true);
        // HOWK's signature too: HMAC of "<t>.<bytes>".
        const t = got.headers['x-webhook-timestamp'] as string;
        const key = Buffer.from(TEST_SECRET.slice(6), 'base64');
        const mac = createHmac('sha256', key).update(`${t}.`).update(CSV).digest('hex');
        expect(got.headers['x-webhook-signature']).toBe(`t=${t},v1=${mac}`);
      }
    });

    it('keeps the bytes and type through a dead letter and its replay', async () => {
      const path = `/dead/${uniq('xml')}`;
      const xml = Buffer.from('<?xml version="1.0"?>\r\n<a b="\u00e9"/>\n', 'utf8');
      const res = await f.post('/webhooks/raw/enqueue', { endpoint: rx.url(path), body_base64: xml.toString('base64'), content_type: 'application/xml', max_attempts: 1 });
      const { webhook_id: id } = (await res.json()) as { webhook_id: string };
      await waitFor(async () => (await fetch(`${f.baseUrl}/deadletter/${id}`)).status === 200, { what: 'the dead letter' });
      const replay = await f.post(`/deadletter/${id}/replay`, {});
      expect(replay.status).toBe(202);
      await waitFor(() => delivered(path).length >= 2, { what: 'the replayed attempt' });
      for (const got of delivered(path)) {
        expect(got.body.equals(xml)).toBe(true);
        expect(got.headers['content-type']).toBe('application/xml');
        expect(verifyStandardWebhook(TEST_SECRET, got.headers, got.body)).toBe(true);
      }
    });

    it('refuses bad base64, a missing or malformed content_type, and payload with body_base64, naming the field; nothing enqueued', async () => {
      const tag = uniq('bad');
      const endpoint = rx.url(`/bad/${tag}`);
      const cases: [unknown, string][] = [
        [{ endpoint, body_base64: 'not base64!', content_type: 'text/csv' }, 'body_base64'],
        [{ endpoint, body_base64: 'YWJj=', content_type: 'text/csv' }, 'body_base64'],
        [{ endpoint, body_base64: 'YWJj' }, 'content_type'],
        [{ endpoint, body_base64: 'YWJj', content_type: 'text/csv\r\nx-evil: 1' }, 'content_type'],
        [{ endpoint, body_base64: 'YWJj', content_type: 'csv' }, 'content_type'],
        [{ endpoint, payload: { a: 1 }, content_type: 'text/csv' }, 'content_type'],
        [{ endpoint, payload: { a: 1 }, body_base64: 'YWJj', content_type: 'text/csv' }, 'body_base64'],
        [{ endpoint }, 'payload'],
      ];
      for (const [body, field] of cases) {
        const res = await f.post('/webhooks/raw/enqueue', body);
        const err = ((await res.json()) as { error: { code: string; message: string } }).error;
        expect([res.status, err.code], JSON.stringify(body)).toEqual([400, 'invalid_request']);
        expect(err.message.startsWith(`${field}: `), `${JSON.stringify(body)} → ${err.message}`).toBe(true);
      }
      const batch = await f.post('/webhooks/raw/enqueue/batch', {
        webhooks: [
          { endpoint, body_base64: 'YWJj', content_type: 'text/csv' },
          { endpoint, body_base64: 'YWJj' },
        ],
      });
      expect(batch.status).toBe(400);
      expect(((await batch.json()) as { error: { message: string } }).error.message).toMatch(/^webhooks\.1\.content_type: /);
      await new Promise((r) => setTimeout(r, 300));
      expect(rx.received.filter((r) => r.path.includes(tag))).toHaveLength(0);
      expect(recordsWith(tag)).toHaveLength(0);
    });

    it('holds raw bodies to api.max_request_size as JSON bodies are: 413 above it, nothing enqueued', async () => {
      const tag = uniq('size');
      const endpoint = rx.url(`/size/${tag}`);
      const envelope = (n: number) => JSON.stringify({ endpoint, body_base64: Buffer.alloc(n, 0xff).toString('base64'), content_type: 'application/octet-stream' });
      // The largest body whose request fits, and one 3 bytes (4 base64 characters) more.
      let n = 0;
      while (Buffer.byteLength(envelope(n + 3)) <= LIMIT) n += 3;
      expect((await f.post('/webhooks/raw/enqueue', envelope(n))).status).toBe(202);
      const over = await f.post('/webhooks/raw/enqueue', envelope(n + 3));
      expect(over.status).toBe(413);
      expect(((await over.json()) as { error: { code: string } }).error.code).toBe('too_large');
      // A JSON payload meets the same limit.
      const json = JSON.stringify({ endpoint, payload: 'x'.repeat(LIMIT) });
      expect((await f.post('/webhooks/raw/enqueue', json)).status).toBe(413);
      await waitFor(() => rx.received.filter((r) => r.path === `/size/${tag}`).length >= 1, { what: 'the delivery at the limit' });
      await new Promise((r) => setTimeout(r, 300));
      const got = rx.received.filter((r) => r.path === `/size/${tag}`);
      expect(got.map((r) => r.body.length)).toEqual([n]);
    });

    it('treats the bytes and type as the request an idempotency key names', async () => {
      const key = uniq('raw-key');
      const endpoint = rx.url(`/idem/${key}`);
      const body = { endpoint, body_base64: CSV.toString('base64'), content_type: TYPE, idempotency_key: key };
      const first = (await (await f.post('/webhooks/raw/enqueue', body)).json()) as { webhook_id: string };
      const again = await f.post('/webhooks/raw/enqueue', body);
      expect([again.status, await again.json()]).toEqual([200, { webhook_id: first.webhook_id, status: 'duplicate' }]);
      for (const other of [
        { ...body, body_base64: Buffer.concat([CSV, Buffer.from('x')]).toString('base64') },
        { ...body, content_type: 'text/plain' },
      ]) {
        const r = await f.post('/webhooks/raw/enqueue', other);
        expect(r.status).toBe(409);
        expect(((await r.json()) as { error: { code: string } }).error.code).toBe('idempotency_key_conflict');
      }
    });
  });
}
