import { afterEach, describe, expect, it } from 'vitest';
import type { DeliveryRequest, Sender } from '../../core/ports/sender';
import { createHttpSender } from '../../workers/node/sender';
import { startReceiver, type Receiver } from '../helpers/receiver';

// The worker's undici sender, against a loopback receiver: a request undici refuses to build
// must cost no pooled connection. (It raises inside the pool, where the failed dispatch left
// that connection slot waiting for a drain that never comes: `connections` such requests
// and the origin could not be delivered to any more.)

const CONNECTIONS = 2;

describe('http sender: requests refused on this side', () => {
  let rx: Receiver | undefined;
  let sender: Sender | undefined;
  afterEach(async () => {
    await sender?.close();
    await rx?.close();
  });
  const start = async () => {
    rx = await startReceiver(() => ({ status: 200 }));
    sender = createHttpSender({ connectionsPerOrigin: CONNECTIONS, snippetBytes: 64, allowedNetworks: ['127.0.0.0/8'] });
    return { rx, sender };
  };
  const req = (url: string, extra: Partial<DeliveryRequest> = {}): DeliveryRequest => ({
    url,
    headers: { 'content-type': 'application/json' },
    body: '{}',
    timeoutMs: 3000,
    ...extra,
  });

  it('a header undici refuses is answered invalid_request, sends nothing, and the pool still delivers', async () => {
    const { rx, sender } = await start();
    const bad: Record<string, string>[] = [
      { expect: '100-continue' },
      { 'x-price': '5 €' },
      { 'keep-alive': 'timeout=5' },
      { upgrade: 'h2c' },
      { 'x-a': 'a\u0001' },
      { 'x-a': '\u007f' },
      { 'transfer-encoding': 'chunked' },
      { connection: 'close' },
    ];
    for (let i = 0; i < 10 * CONNECTIONS; i++) {
      const r = await sender.send(req(rx.url('/bad'), { headers: bad[i % bad.length]! }));
      expect(r.kind).toBe('invalid_request');
    }
    const ok = await Promise.all(Array.from({ length: 4 * CONNECTIONS }, () => sender.send(req(rx.url('/good')))));
    expect(ok.map((r) => (r.kind === 'response' ? r.status : r.kind))).toEqual(Array(4 * CONNECTIONS).fill(200));
    expect(rx.received.map((r) => r.path)).toEqual(Array(4 * CONNECTIONS).fill('/good'));
  });

  it('anything else undici refuses while building the request (here a body that is not a string) is invalid_request, and later requests still go out', async () => {
    const { rx, sender } = await start();
    for (let i = 0; i < 3 * CONNECTIONS; i++) {
      const r = await sender.send(req(rx.url('/bad'), { body: { not: 'a string' } as unknown as string }));
      expect(r).toMatchObject({ kind: 'invalid_request', error: expect.stringMatching(/^UND_ERR_INVALID_ARG: /) });
    }
    const ok = await Promise.all(Array.from({ length: 4 * CONNECTIONS }, () => sender.send(req(rx.url('/good')))));
    expect(ok.map((r) => (r.kind === 'response' ? r.status : r.kind))).toEqual(Array(4 * CONNECTIONS).fill(200));
  });
});
