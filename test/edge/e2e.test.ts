import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { waitFor } from '../helpers/env';
import { TEST_SECRET } from '../helpers/fleet';
import { spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';
import { edgeVars, ensureTopics, fleetEnv, startBridge, startEdge, useFleetRedisDb, type Bridge, type Edge } from './helpers/stack';

// The acceptance run: the wrangler-built Worker in Miniflare takes an enqueue, its DomainGate
// produces it over REST to howk-bridge, the bridge to Kafka; howk-worker (a process) delivers
// it to a local receiver, and the signature verifies.
describe('edge → bridge → Kafka → howk-worker → receiver', () => {
  const env = fleetEnv();
  useFleetRedisDb(env);
  let bridge: Bridge;
  let worker: Proc;
  let edge: Edge;
  let rx: Receiver;

  beforeAll(async () => {
    await ensureTopics(env);
    rx = await startReceiver();
    [bridge] = await Promise.all([startBridge(env)]);
    worker = spawnRole('worker', env);
    edge = await startEdge(edgeVars(env, bridge.url));
  });
  afterAll(async () => {
    await edge?.stop();
    await Promise.all([worker && stopProc(worker), bridge?.stop()]);
    await rx?.close();
  });

  it('delivers an edge enqueue, signed, with the payload bytes as sent', async () => {
    const payload = '{"event":"user.created","id":12345678901234567890,"price":1.0,"s":"\\u00e9"}';
    const res = await edge.post('/webhooks/tenant-e2e/enqueue', `{"endpoint":"${rx.url('/e2e')}","payload":${payload},"headers":{"X-Trace":"t1"}}`);
    expect(res.status).toBe(202);
    const body = (await res.json()) as { webhook_id: string; status: string };
    expect(body.status).toBe('pending');
    expect(res.headers.get('location')).toBe(`/webhooks/${body.webhook_id}/status`);
    const got = await waitFor(() => rx.received.find((r) => r.headers['webhook-id'] === body.webhook_id), { timeoutMs: 60_000, what: `the delivery\n${worker.output()}` });
    expect(got.body.toString('utf8')).toBe(payload);
    expect(got.headers['x-trace']).toBe('t1');
    expect(verifyStandardWebhook(TEST_SECRET, got.headers as Record<string, string>, got.body)).toBe(true);

    // The edge reads the status the worker wrote, through the bridge's Redis dialect.
    const hot = new RedisHotState(createRedis(env.HOWK_REDIS_URL!), { status_ttl: 60_000, stats_ttl: 60_000, retry_data_ttl: 60_000 });
    try {
      const native = await waitFor(async () => ((await hot.getStatus(body.webhook_id))?.state === 'delivered' ? hot.getStatus(body.webhook_id) : undefined), {
        what: 'delivered status',
      });
      const status = await edge.mf.dispatchFetch(`http://edge/webhooks/${body.webhook_id}/status`);
      expect(status.status).toBe(200);
      const { updated_at_ns: _ns, ...view } = native!;
      expect(await status.json()).toEqual(view);
    } finally {
      await hot.close();
    }
  });

  it('delivers a batch spread over two hosts, every item once', async () => {
    const webhooks = Array.from({ length: 20 }, (_, i) => ({ endpoint: i % 2 ? rx.url(`/b${i}`) : rx.url(`/b${i}`).replace('127.0.0.1', 'localhost'), payload: { i } }));
    const res = await edge.post('/webhooks/tenant-e2e/enqueue/batch', { webhooks });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { count: number; accepted: number; results: { index: number; webhook_id: string; status: string }[] };
    expect(body).toMatchObject({ count: 20, accepted: 20 });
    const ids = new Set(body.results.map((r) => r.webhook_id));
    await waitFor(() => [...ids].every((id) => rx.received.some((r) => r.headers['webhook-id'] === id)), { timeoutMs: 60_000, what: 'all 20 deliveries' });
    for (const r of body.results) {
      const got = rx.received.filter((x) => x.headers['webhook-id'] === r.webhook_id);
      expect(JSON.parse(got[0]!.body.toString())).toEqual({ i: r.index });
    }
  });
});
