import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { requireEnv, waitFor } from '../helpers/env';
import { startTestFleet, testConfig, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Received, type Receiver } from '../helpers/receiver';
import { useRedisDb } from '../helpers/redis-db';

// Script propagation (docs/LUA.md): a script PUT on one api instance reaches workers through the
// compacted howk.scripts topic: a worker already running uses it within 2 s, a worker started
// afterwards from its first delivery. The api and the workers are separate fleets (own Kafka
// clients, own replay of the topic) sharing one topic set and a Redis db of their own.

const redisDb = useRedisDb();
const CONFIG = 'prop';
/** How long after the PUT's answer every worker may take to use the new script (docs/LUA.md). */
const WITHIN_MS = 2000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('delivery script propagation across instances (real Kafka + Redis)', () => {
  let rx: Receiver;
  let api: TestFleet;
  const workers: TestFleet[] = [];
  const config = testConfig('kafka');
  beforeAll(async () => {
    const redis = createRedis(requireEnv('REDIS_URL'), { db: redisDb(), commandTimeoutMs: 2000 });
    await redis.flushdb();
    redis.disconnect();
    rx = await startReceiver();
    api = await startTestFleet('kafka', { config, redisDb: redisDb(), roles: { api: true } });
  });
  afterAll(async () => {
    for (const w of workers) await w.stop();
    await api?.stop();
    await rx?.close();
  });

  const startWorker = async () => {
    const w = await startTestFleet('kafka', { config, redisDb: redisDb(), roles: { worker: true, scheduler: true } });
    workers.push(w);
    return w;
  };
  const stopWorker = async (w: TestFleet) => {
    await w.stop();
    workers.splice(workers.indexOf(w), 1);
  };
  const put = async (script: string) => {
    const res = await fetch(`${api.baseUrl}/config/${CONFIG}/script`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: script });
    expect(res.status).toBe(200);
  };
  const enqueue = async () => {
    const res = await api.post(`/webhooks/${CONFIG}/enqueue`, { endpoint: rx.url('/prop'), payload: {} });
    expect(res.status).toBe(202);
    return ((await res.json()) as any).webhook_id as string;
  };
  const delivered = (ids: string[]) =>
    waitFor(
      () => {
        const got = ids.map((id) => rx.received.find((r) => r.headers['webhook-id'] === id));
        return got.every(Boolean) ? (got as Received[]) : undefined;
      },
      { timeoutMs: 60_000, what: `${ids.length} deliveries` },
    );
  const version = (r: Received) => r.headers['x-version'] ?? 'none';

  /**
   * Changes the script, then enqueues a webhook every 100 ms for WITHIN_MS + 1 s. Every webhook
   * enqueued WITHIN_MS or more after the change was answered is delivered after that point, so
   * it must carry the new version. Returns when the first one did (for the report).
   */
  const switchover = async (change: () => Promise<void>, want: string) => {
    await change();
    const t0 = Date.now();
    const sent: { id: string; at: number }[] = [];
    while (Date.now() - t0 < WITHIN_MS + 1000) {
      const at = Date.now() - t0;
      sent.push({ id: await enqueue(), at });
      await sleep(100);
    }
    const got = await delivered(sent.map((s) => s.id));
    const late = sent.map((s, i) => ({ ...s, version: version(got[i]!) })).filter((s) => s.at >= WITHIN_MS);
    expect(late.length).toBeGreaterThan(0);
    expect(late.filter((s) => s.version !== want)).toEqual([]);
    return sent[got.findIndex((r) => version(r) === want)]!.at;
  };

  it('a worker already running uses a PUT (and a DELETE) within 2 s', async () => {
    const w = await startWorker();
    await put("request.headers['X-Version'] = 'v1'");
    // The worker has its partitions and v1 before the change being measured.
    await waitFor(async () => version((await delivered([await enqueue()]))[0]!) === 'v1', { what: 'v1 in use' });
    const putAt = await switchover(() => put("request.headers['X-Version'] = 'v2'"), 'v2');
    const deleteAt = await switchover(async () => {
      expect((await fetch(`${api.baseUrl}/config/${CONFIG}/script`, { method: 'DELETE' })).status).toBe(200);
    }, 'none');
    console.log(`running worker: first webhook with the new script enqueued ${putAt} ms after the PUT, without it ${deleteAt} ms after the DELETE`);
    await stopWorker(w);
  });

  it('a worker started after the PUT uses the script from its first delivery', async () => {
    await put("request.headers['X-Version'] = 'v3'");
    const w = await startWorker();
    const first = await enqueue();
    expect(version((await delivered([first]))[0]!)).toBe('v3');
    await stopWorker(w);
  });
});
