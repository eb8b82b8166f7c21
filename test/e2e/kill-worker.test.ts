import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { TEST_SECRET } from '../helpers/fleet';
import { redisUrlOf, useRedisDb } from '../helpers/redis-db';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';

// The binaries as processes on real Kafka + Redis: kill -9 the worker in the middle of
// 2,000 webhooks, start a new one, and every webhook still arrives (at least once).
describe('kill -9 of howk-worker mid-stream', () => {
  const N = 2000;
  const db = useRedisDb();
  let rx: Receiver;
  let env: Record<string, string>;
  let api: Proc;
  let scheduler: Proc;
  const workers: Proc[] = [];

  beforeAll(async () => {
    const redis = createRedis(requireEnv('REDIS_URL'), { db: db() });
    await redis.flushdb();
    await redis.quit();
    const p = uniq('e2e');
    const port = await freePort();
    env = {
      HOWK_API_PORT: String(port),
      HOWK_API_HOST: '127.0.0.1',
      HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
      HOWK_REDIS_URL: redisUrlOf(db()),
      HOWK_KAFKA_TOPICS_PENDING: `${p}.pending`,
      HOWK_KAFKA_TOPICS_SLOW: `${p}.slow`,
      HOWK_KAFKA_TOPICS_RESULTS: `${p}.results`,
      HOWK_KAFKA_TOPICS_DEADLETTER: `${p}.deadletter`,
      HOWK_KAFKA_TOPICS_STATE: `${p}.state`,
      HOWK_KAFKA_TOPICS_SCRIPTS: `${p}.scripts`,
      HOWK_KAFKA_TOPICS_KEYS: `${p}.keys`,
      HOWK_KAFKA_TOPICS_CONFIG_SECRETS: `${p}.config-secrets`,
      HOWK_KAFKA_TOPICS_GUARDS: `${p}.guards`,
      // The receiver is on loopback and this test is not about API keys.
      HOWK_DELIVERY_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
      HOWK_API_AUTH_ENABLED: 'false',
      HOWK_KAFKA_CONSUMER_GROUP: `${p}-workers`,
      HOWK_KAFKA_PARTITIONS: '4',
      HOWK_KAFKA_SESSION_TIMEOUT: '6s',
      HOWK_SIGNING_DEFAULT_SECRET: TEST_SECRET,
      HOWK_RETRY_BASE_DELAY: '200ms',
      HOWK_SCHEDULER_POLL_INTERVAL: '100ms',
      HOWK_LOG_LEVEL: 'warn',
    };
    // Slow enough that the kill lands while most webhooks are still undelivered.
    rx = await startReceiver(() => ({ status: 200, delayMs: 5 }));
    api = spawnRole('api', env);
    scheduler = spawnRole('scheduler', env);
    workers.push(spawnRole('worker', env));
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined))?.status === 200, {
      timeoutMs: 60_000,
      what: `howk-api ready\n${api.output()}`,
    });
    env.API = `http://127.0.0.1:${port}`;
  });

  afterAll(async () => {
    await Promise.all([api, scheduler, ...workers].filter(Boolean).map((p) => stopProc(p)));
    await rx?.close();
  });

  it('delivers every accepted webhook after the worker is killed and replaced', async () => {
    const accepted = new Set<string>();
    for (let b = 0; b < N / 100; b++) {
      const webhooks = Array.from({ length: 100 }, (_, i) => ({ endpoint: rx.url(`/k${(b * 100 + i) % 7}`), payload: { n: b * 100 + i } }));
      const res = await fetch(`${env.API}/webhooks/tenant-${b % 10}/enqueue/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ webhooks }),
      });
      expect(res.status).toBe(202);
      for (const r of ((await res.json()) as any).results) accepted.add(r.webhook_id);
    }
    expect(accepted.size).toBe(N);
    const uniqueDelivered = () => new Set(rx.received.map((r) => String(r.headers['webhook-id']))).size;
    await waitFor(() => uniqueDelivered() >= 300, { timeoutMs: 60_000, what: `first deliveries\n${workers[0]!.output()}` });
    workers[0]!.child.kill('SIGKILL');
    await workers[0]!.exited;
    const atKill = uniqueDelivered();
    expect(atKill).toBeLessThan(N);
    workers.push(spawnRole('worker', env));
    await waitFor(() => uniqueDelivered() === N, { timeoutMs: 90_000, what: `all ${N} deliveries (had ${uniqueDelivered()})\n${workers[1]!.output()}` });
    const ids = rx.byWebhook();
    for (const id of accepted) expect(ids.has(id)).toBe(true);
    for (const r of rx.received.slice(0, 50)) expect(verifyStandardWebhook(TEST_SECRET, r.headers as any, r.body)).toBe(true);
    console.log(`kill -9 run: ${N} accepted, ${atKill} delivered before the kill, ${rx.received.length - N} duplicates after redelivery`);
  });
});
