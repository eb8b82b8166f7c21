import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { TEST_SECRET } from '../helpers/fleet';
import { redisUrlOf, useRedisDb } from '../helpers/redis-db';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';

// The binaries as processes: two howk-api and one howk-worker on real Kafka + Redis, and a
// howk-dev. An enqueue that waits gets the first attempt's outcome from whichever process made it.

const ready = (p: Proc, base: string) =>
  waitFor(async () => (await fetch(`${base}/ready`).catch(() => undefined))?.status === 200, { timeoutMs: 90_000, what: `${p.role} ready\n${p.output()}` });

const enqueueWaiting = async (base: string, endpoint: string) => {
  const res = await fetch(`${base}/webhooks/${uniq('cfg')}/enqueue?wait=10s`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ endpoint, payload: { n: 1 }, max_attempts: 2 }),
  });
  return { status: res.status, body: (await res.json()) as any };
};

describe('enqueue ?wait= across processes', () => {
  const db = useRedisDb();
  let rx: Receiver;
  const procs: Proc[] = [];
  const apis: string[] = [];
  let dev: string;

  beforeAll(async () => {
    const redis = createRedis(requireEnv('REDIS_URL'), { db: db() });
    await redis.flushdb();
    await redis.quit();
    rx = await startReceiver((r) => ({ status: r.path === '/down' ? 503 : 200 }));
    const p = uniq('e2e-sync');
    const env: Record<string, string> = {
      HOWK_API_HOST: '127.0.0.1',
      HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
      HOWK_REDIS_URL: redisUrlOf(db()),
      ...Object.fromEntries(
        ['pending', 'slow', 'results', 'deadletter', 'state', 'scripts', 'keys', 'config_secrets', 'guards', 'applications', 'messages'].map((t) => [
          `HOWK_KAFKA_TOPICS_${t.toUpperCase()}`,
          `${p}.${t}`,
        ]),
      ),
      HOWK_DELIVERY_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
      HOWK_API_AUTH_ENABLED: 'false',
      HOWK_KAFKA_CONSUMER_GROUP: `${p}-workers`,
      HOWK_KAFKA_PARTITIONS: '2',
      HOWK_SIGNING_DEFAULT_SECRET: TEST_SECRET,
      HOWK_LOG_LEVEL: 'warn',
    };
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const api = spawnRole('api', { ...env, HOWK_API_PORT: String(port) });
      procs.push(api);
      apis.push(`http://127.0.0.1:${port}`);
    }
    procs.push(spawnRole('worker', env));
    const devPort = await freePort();
    const d = spawnRole('dev', { HOWK_API_PORT: String(devPort), HOWK_API_HOST: '127.0.0.1', HOWK_DELIVERY_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128', HOWK_LOG_LEVEL: 'warn' }, [
      '--memory',
    ]);
    procs.push(d);
    dev = `http://127.0.0.1:${devPort}`;
    await Promise.all([ready(procs[0]!, apis[0]!), ready(procs[1]!, apis[1]!), ready(d, dev)]);
    // The worker has its partitions once a webhook goes through.
    const first = await fetch(`${apis[0]}/webhooks/warm/enqueue`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint: rx.url('/ok'), payload: {} }),
    });
    const { webhook_id } = (await first.json()) as { webhook_id: string };
    await waitFor(() => rx.byWebhook().get(webhook_id), { timeoutMs: 90_000, what: `the first delivery\n${procs[2]!.output()}` });
  }, 180_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => stopProc(p)));
    await rx?.close();
  });

  it('each howk-api learns the outcome from the howk-worker process: delivered, then retrying', async () => {
    for (const api of apis) {
      expect(await enqueueWaiting(api, rx.url('/ok'))).toMatchObject({ status: 200, body: { status: 'delivered', outcome: { status_code: 200 } } });
      const down = await enqueueWaiting(api, rx.url('/down'));
      expect(down).toMatchObject({ status: 200, body: { status: 'retrying', outcome: { status_code: 503 } } });
      expect(down.body.outcome.next_retry_at).toEqual(expect.any(String));
    }
  }, 60_000);

  it('two hundred waiting requests at once, over both api instances: each gets its own outcome', async () => {
    const t0 = Date.now();
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => enqueueWaiting(apis[i % 2]!, rx.url(`/ok/${i}`))));
    console.log(`[sync-wait] 200 waiting requests answered in ${Date.now() - t0} ms`);
    expect(answers.map((a) => `${a.status} ${a.body.status}`)).toEqual(Array(200).fill('200 delivered'));
    const ids = answers.map((a) => a.body.webhook_id);
    expect(new Set(ids).size).toBe(200);
    // Each answer names the webhook that reached its own path.
    const byId = rx.byWebhook();
    answers.forEach((a, i) => expect(byId.get(a.body.webhook_id)![0]!.path).toBe(`/ok/${i}`));
  }, 60_000);

  it('howk-dev answers a wait in-process', async () => {
    expect(await enqueueWaiting(dev, rx.url('/ok'))).toMatchObject({ status: 200, body: { status: 'delivered' } });
  }, 30_000);
});
