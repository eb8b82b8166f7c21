import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { useRedisDb } from '../helpers/redis-db';

// A worker starts delivering a record as soon as it is fetched: a batch held by a slow
// endpoint on one partition holds back neither other partitions nor later batches. Real
// Kafka + Redis (a db of its own). The straggler hand-off is pushed out of reach, so that the slow
// batch stays unresolved for the whole test: before pipelined consumption, kafkajs fetched
// nothing more until it resolved.

const redisDb = useRedisDb();
const FAST_CONFIGS = 8;

/** A loopback receiver whose /slow requests are answered only when the test says so. */
const startHoldingReceiver = async () => {
  const received: { path: string; headers: IncomingHttpHeaders }[] = [];
  const held: ServerResponse[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push({ path: req.url ?? '/', headers: req.headers });
      if (req.url?.startsWith('/slow')) held.push(res);
      else res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    received,
    held,
    release: () => {
      for (const res of held.splice(0)) res.writeHead(200).end('ok');
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
};

describe('pipelined consumption (kafka)', () => {
  let f: TestFleet;
  let rx: Awaited<ReturnType<typeof startHoldingReceiver>>;
  beforeAll(async () => {
    rx = await startHoldingReceiver();
    f = await startTestFleet('kafka', {
      redisDb: redisDb(),
      overrides: { 'delivery.straggler_after': 60_000, 'delivery.batch_time_limit': 60_000, 'delivery.timeout': 60_000 },
    });
  });
  afterAll(async () => {
    rx?.release();
    await f?.stop();
    await rx?.close();
  });

  it("delivers other configs, on other partitions, while a slow endpoint's batch is still pending", async () => {
    const slow = await f.post('/webhooks/cfg-slow/enqueue', { endpoint: rx.url('/slow'), payload: { n: 0 } });
    expect(slow.status).toBe(202);
    const slowId = ((await slow.json()) as { webhook_id: string }).webhook_id;
    await waitFor(() => rx.held.length === 1, { timeoutMs: 20_000, what: 'the slow delivery to be in flight' });

    const fastIds: string[] = [];
    for (let i = 0; i < FAST_CONFIGS; i++) {
      const res = await f.post(`/webhooks/cfg-fast-${i}/enqueue`, { endpoint: rx.url(`/fast/${i}`), payload: { n: i } });
      expect(res.status).toBe(202);
      fastIds.push(((await res.json()) as { webhook_id: string }).webhook_id);
    }
    const deliveredFast = () => new Set(rx.received.filter((r) => r.path.startsWith('/fast/')).map((r) => String(r.headers['webhook-id'])));
    await waitFor(() => deliveredFast().size === FAST_CONFIGS, { timeoutMs: 20_000, what: 'every fast config delivered' });

    // The order observed: every fast webhook arrived while the slow one was still held.
    expect(rx.held).toHaveLength(1);
    expect(rx.received.filter((r) => r.path === '/slow')).toHaveLength(1);
    expect([...deliveredFast()].sort()).toEqual([...fastIds].sort());
    const statusOf = async (id: string) => ((await (await fetch(`${f.baseUrl}/webhooks/${id}/status`)).json()) as { state: string }).state;
    expect(await statusOf(slowId)).toBe('pending');

    // And the scenario is the one named: some of them live on another partition than the slow one.
    await waitFor(() => f.records('pending').length >= FAST_CONFIGS + 1, { timeoutMs: 10_000, what: 'the collector' });
    const partitionOf = (cfg: string) => f.records('pending').find((r) => r.key === cfg)!.partition;
    const slowPartition = partitionOf('cfg-slow');
    expect(Array.from({ length: FAST_CONFIGS }, (_, i) => partitionOf(`cfg-fast-${i}`)).some((p) => p !== slowPartition)).toBe(true);

    rx.release();
    await waitFor(async () => (await statusOf(slowId)) === 'delivered', { timeoutMs: 20_000, what: 'the slow webhook delivered once released' });
  }, 90_000);
});
