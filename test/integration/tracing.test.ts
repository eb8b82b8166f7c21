import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeWebhook } from '../../core/records/webhook';
import { waitFor } from '../helpers/env';
import { startTestFleet, testConfig, type TestFleet } from '../helpers/fleet';
import { emptyOwnDb } from '../helpers/own-db';
import { useRedisDb } from '../helpers/redis-db';
import { startReceiver, type Receiver } from '../helpers/receiver';

// OpenTelemetry on real Kafka + Redis: howk-api and howk-worker as two fleets export to an
// in-process OTLP/HTTP receiver (JSON). One webhook, retried once, is one trace: the api's
// enqueue span and a worker span per attempt, with each attempt's status code.

type Attr = { key: string; value: { stringValue?: string; intValue?: string | number; boolValue?: boolean } };
type OtlpSpan = { traceId: string; spanId: string; parentSpanId?: string; name: string; attributes: Attr[]; status?: { code?: number } };
type Span = OtlpSpan & { service: string; attrs: Record<string, string | number | boolean | undefined> };

const hex = (id: string | undefined) => (!id ? '' : /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, 'base64').toString('hex'));

const startOtlpReceiver = async () => {
  const spans: Span[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as {
        resourceSpans: { resource: { attributes: Attr[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      for (const rs of body.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans) {
            const attrs = Object.fromEntries(
              s.attributes.map((a) => [a.key, a.value.stringValue ?? (a.value.intValue !== undefined ? Number(a.value.intValue) : a.value.boolValue)]),
            );
            spans.push({ ...s, traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId), service, attrs });
          }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
  return { url, spans, close: () => new Promise<void>((r) => server.close(() => r())) };
};

describe('tracing (real Kafka + Redis)', () => {
  const redisDb = useRedisDb();
  let rx: Receiver;
  let otlp: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let api: TestFleet;
  let worker: TestFleet;

  beforeAll(async () => {
    await emptyOwnDb(redisDb());
    rx = await startReceiver((r, nth) => (r.path.startsWith('/flaky') && nth === 1 ? { status: 503 } : { status: 200 }));
    otlp = await startOtlpReceiver();
    const config = testConfig('kafka', { 'tracing.enabled': true, 'tracing.otlp_endpoint': otlp.url, 'tracing.outbound_traceparent': true });
    api = await startTestFleet('kafka', { config, redisDb: redisDb(), roles: { api: true, worker: false, scheduler: false } });
    worker = await startTestFleet('kafka', { config, redisDb: redisDb(), roles: { api: false, worker: true, scheduler: true } });
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    await rx?.close();
    await otlp?.close();
  });

  it('one trace from the enqueue on the api to every attempt on the worker', async () => {
    const res = await api.post('/webhooks/tr/enqueue', { endpoint: rx.url('/flaky'), payload: { n: 1 } });
    expect(res.status).toBe(202);
    const { webhook_id: id } = (await res.json()) as { webhook_id: string };
    await waitFor(() => rx.received.length >= 2, { what: 'two attempts' });
    const mine = () => otlp.spans.filter((s) => s.attrs['howk.webhook_id'] === id);
    await waitFor(() => mine().length >= 3, { what: 'three spans exported' });

    const enqueue = mine().find((s) => s.name === 'howk.enqueue')!;
    expect(enqueue.service).toBe('howk-api');
    const attempts = mine()
      .filter((s) => s.name === 'howk.attempt')
      .sort((a, b) => Number(a.attrs['howk.attempt']) - Number(b.attrs['howk.attempt']));
    expect(attempts.map((s) => s.service)).toEqual(['howk-worker+scheduler', 'howk-worker+scheduler']);
    for (const a of attempts) {
      expect(a.traceId).toBe(enqueue.traceId);
      expect(a.parentSpanId).toBe(enqueue.spanId);
    }
    expect(attempts.map((s) => s.attrs['http.response.status_code'])).toEqual([503, 200]);
    expect(attempts.map((s) => s.attrs['howk.decision'])).toEqual(['retry', 'delivered']);
    // OTLP status codes: 2 = error, 1 = ok.
    expect(attempts.map((s) => s.status?.code)).toEqual([2, 1]);

    // The record on the pending topic carries the enqueue span's context.
    const rec = api.records('pending').find((r) => r.value && decodeWebhook(r.value).id === id);
    expect(rec?.headers?.traceparent).toMatch(new RegExp(`^00-${enqueue.traceId}-${enqueue.spanId}-0[01]$`));
    // Outbound requests carry each attempt's span (tracing.outbound_traceparent), still signed.
    const sent = rx.received.filter((r) => r.path === '/flaky');
    expect(sent.map((r) => r.headers.traceparent)).toEqual(attempts.map((a) => `00-${a.traceId}-${a.spanId}-01`));
    for (const r of sent) expect(r.headers['webhook-signature']).toMatch(/^v1,/);
  });
});

describe('tracing off (the default)', () => {
  let rx: Receiver;
  let f: TestFleet;
  beforeAll(async () => {
    rx = await startReceiver();
    f = await startTestFleet('kafka');
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  it('writes no trace context on records, webhooks or outbound requests', async () => {
    expect(f.config.tracing.enabled).toBe(false);
    const res = await f.post('/webhooks/off/enqueue', { endpoint: rx.url('/off'), payload: {} });
    expect(res.status).toBe(202);
    const { webhook_id: id } = (await res.json()) as { webhook_id: string };
    await waitFor(() => rx.received.length >= 1, { what: 'the delivery' });
    const rec = await waitFor(() => f.records('pending').find((r) => r.value && decodeWebhook(r.value).id === id), { what: 'the pending record' });
    expect(rec.headers?.traceparent).toBeUndefined();
    expect(decodeWebhook(rec.value!).trace).toBeUndefined();
    expect(rx.received[0]!.headers.traceparent).toBeUndefined();
  });
});
