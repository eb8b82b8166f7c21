// Receiver of e2e.bench.ts: one node:http server listening on `origins` ports of 127.0.0.1
// (one origin each). It records the first arrival of every webhook id, counts duplicates, and
// verifies the signature of every 100th delivery. Paths under /warm are the warm-up's.
import { createServer, type IncomingMessage } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer } from 'node:net';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';

const SAMPLE_EVERY = 100; // verify the signature of every 100th delivery

export type E2eReceiver = {
  urls: string[];
  /** webhook-id → performance.now() of its first delivery (warm-up excluded). */
  arrivals: Map<string, number>;
  counts: () => { duplicates: number; received: number; warm: number; badSignatures: number; sampled: number };
  /** From now on every request is answered 503 (while the services stop). */
  refuse: () => void;
  close: () => Promise<void>;
};

export const startE2eReceiver = async (secret: string, origins: number): Promise<E2eReceiver> => {
  const arrivals = new Map<string, number>();
  const c = { duplicates: 0, received: 0, warm: 0, badSignatures: 0, sampled: 0 };
  let receiving = true;
  let requests = 0;
  const server = createServer((req: IncomingMessage, res) => {
    const at = performance.now();
    requests++;
    const id = String(req.headers['webhook-id']);
    const warm = req.url?.startsWith('/warm') ?? false;
    if (!receiving) {
      res.writeHead(503).end();
      req.resume();
      return;
    }
    const verify = !warm && requests % SAMPLE_EVERY === 0;
    const chunks: Buffer[] = [];
    if (verify) req.on('data', (b: Buffer) => chunks.push(b));
    else req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok');
      if (verify) {
        c.sampled++;
        if (!verifyStandardWebhook(secret, req.headers, Buffer.concat(chunks))) c.badSignatures++;
      }
    });
    if (warm) {
      c.warm++;
      return;
    }
    c.received++;
    if (arrivals.has(id)) c.duplicates++;
    else arrivals.set(id, at);
  });
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const urls = [`http://127.0.0.1:${(server.address() as AddressInfo).port}`];
  // More origins: the same server also accepts connections from extra listeners.
  const extra: NetServer[] = [];
  for (let i = 1; i < origins; i++) {
    const l = createNetServer((socket) => server.emit('connection', socket));
    await new Promise<void>((r) => l.listen(0, '127.0.0.1', r));
    extra.push(l);
    urls.push(`http://127.0.0.1:${(l.address() as AddressInfo).port}`);
  }
  return {
    urls,
    arrivals,
    counts: () => ({ ...c }),
    refuse: () => {
      receiving = false;
    },
    close: async () => {
      receiving = false;
      server.closeAllConnections();
      for (const l of extra) l.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
};
