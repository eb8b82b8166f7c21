// The zero-work ceiling of busy.bench.ts: a process that takes the same enqueue requests as
// howk-api (POST /webhooks/:config/enqueue/batch and /enqueue), answers 202 with an id per
// webhook and forwards each webhook straight to its endpoint over a keep-alive undici pool
// (FORWARD_CONNS connections per origin, Howk's delivery.max_conns_per_host by default).
// No Kafka, no Redis, no signing, no order, no retries: what is left is the HTTP work both
// sides of a webhook platform cannot avoid on this machine.
//
//   FORWARD_PORT=0 FORWARD_CONNS=10 node --import tsx test/bench/busy-forwarder.ts
// Prints "forwarder listening <port>" once ready. GET /stats: {forwarded, failed, inflight}.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';

const conns = Number(process.env.FORWARD_CONNS ?? 10);
const agent = new Agent({ connections: conns, keepAliveTimeout: 60_000, pipelining: 1 });
let seq = 0;
let forwarded = 0;
let failed = 0;
let inflight = 0;

type Item = { endpoint?: unknown; payload?: unknown };

const forward = (id: string, item: Item): void => {
  if (typeof item.endpoint !== 'string') {
    failed++;
    return;
  }
  inflight++;
  request(item.endpoint, { method: 'POST', body: JSON.stringify(item.payload ?? null), headers: { 'content-type': 'application/json', 'webhook-id': id }, dispatcher: agent })
    .then(async (r) => {
      await r.body.dump();
      if (r.statusCode >= 200 && r.statusCode < 300) forwarded++;
      else failed++;
    })
    .catch(() => failed++)
    .finally(() => inflight--);
};

const server = createServer((req, res) => {
  const m = /^\/webhooks\/[^/]+\/enqueue(\/batch)?$/.exec(req.url ?? '');
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ forwarded, failed, inflight }));
    return;
  }
  if (req.method !== 'POST' || !m) {
    res.writeHead(404).end();
    req.resume();
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let items: Item[];
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Item & { webhooks?: Item[] };
      items = m[1] ? (body.webhooks ?? []) : [body];
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":{"code":"invalid_json","message":"body is not JSON","field":"body"}}');
      return;
    }
    const ids = items.map(() => `fw_${(++seq).toString(36)}`);
    const out = m[1]
      ? { count: items.length, accepted: items.length, results: ids.map((webhook_id, index) => ({ index, webhook_id, status: 'pending', endpoint: items[index]!.endpoint })) }
      : { webhook_id: ids[0], status: 'pending' };
    res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify(out));
    items.forEach((it, i) => forward(ids[i]!, it));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.FORWARD_PORT ?? 0), '127.0.0.1', () => {
  console.log(`forwarder listening ${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close();
  void agent.close().finally(() => process.exit(0));
});
