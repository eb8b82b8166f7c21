import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Received = { path: string; headers: IncomingHttpHeaders; body: Buffer; at: number };
export type Reply = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number };

/**
 * A loopback receiver that records every request. `respond` decides the reply per request
 * (default 200); the nth request to a path is passed so tests can script sequences.
 */
export const startReceiver = async (respond: (r: Received, nth: number) => Reply = () => ({ status: 200 })) => {
  const received: Received[] = [];
  const perPath = new Map<string, number>();
  let inflight = 0;
  let maxInflight = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    inflight++;
    maxInflight = Math.max(maxInflight, inflight);
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks), at: Date.now() };
      received.push(r);
      const nth = (perPath.get(r.path) ?? 0) + 1;
      perPath.set(r.path, nth);
      const reply = respond(r, nth);
      const send = () => {
        inflight--;
        res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers });
        res.end(reply.body ?? '');
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs);
      else send();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path = '/hook') => `http://127.0.0.1:${port}${path}`,
    received,
    maxInflight: () => maxInflight,
    byWebhook: () => {
      const m = new Map<string, Received[]>();
      for (const r of received) {
        const id = String(r.headers['webhook-id']);
        m.set(id, [...(m.get(id) ?? []), r]);
      }
      return m;
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
};

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * POST with node:http, reading the response even when the server answers before the body
 * is fully sent (a 413 on an oversized body closes the connection mid-upload).
 */
export const postRaw = (url: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> =>
  new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE' && e.code !== 'ECONNRESET') reject(e);
    });
    req.end(body);
  });
