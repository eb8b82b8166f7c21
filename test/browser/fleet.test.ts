import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { TEST_SECRET } from '../helpers/fleet';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { redisUrlOf, useRedisDb } from '../helpers/redis-db';
import { expectAccessible, launch, openPage, post } from './helpers';

// The console against the fleet: howk-api, howk-worker and howk-scheduler as processes on the
// real Kafka + Redis. Live Deliveries (the api's one shared poll of Redis), the Overview's
// Redis timeline counters, and the Inspector's sentences from the history Redis keeps.

describe('console on the Kafka + Redis fleet', () => {
  const db = useRedisDb();
  let rx: Receiver;
  let base: string;
  let browser: Browser;
  const procs: Proc[] = [];
  let flaky = 0;

  beforeAll(async () => {
    const redis = createRedis(requireEnv('REDIS_URL'), { db: db() });
    await redis.flushdb();
    await redis.quit();
    const p = uniq('con');
    const port = await freePort();
    const topics = ['pending', 'slow', 'results', 'deadletter', 'state', 'scripts', 'keys', 'config_secrets', 'guards', 'applications', 'messages'];
    const env: Record<string, string> = {
      HOWK_API_PORT: String(port),
      HOWK_API_HOST: '127.0.0.1',
      HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
      HOWK_REDIS_URL: redisUrlOf(db()),
      ...Object.fromEntries(topics.map((t) => [`HOWK_KAFKA_TOPICS_${t.toUpperCase()}`, `${p}.${t.replace('_', '-')}`])),
      HOWK_DELIVERY_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
      HOWK_API_AUTH_ENABLED: 'false',
      HOWK_API_EVENTS_POLL_INTERVAL: '250ms',
      HOWK_KAFKA_CONSUMER_GROUP: `${p}-workers`,
      HOWK_KAFKA_PARTITIONS: '2',
      HOWK_SIGNING_DEFAULT_SECRET: TEST_SECRET,
      HOWK_RETRY_BASE_DELAY: '300ms',
      HOWK_RETRY_JITTER: '0',
      HOWK_SCHEDULER_POLL_INTERVAL: '100ms',
      HOWK_LOG_LEVEL: 'warn',
    };
    rx = await startReceiver((r) => (r.path === '/flaky' && ++flaky === 1 ? { status: 503 } : { status: 200 }));
    procs.push(spawnRole('api', env), spawnRole('worker', env), spawnRole('scheduler', env));
    base = `http://127.0.0.1:${port}`;
    [browser] = await Promise.all([
      launch(),
      waitFor(async () => (await fetch(`${base}/ready`).catch(() => undefined))?.status === 200, { timeoutMs: 90_000, what: `howk-api ready\n${procs[0]!.output()}` }),
    ]);
  });

  afterAll(async () => {
    await browser?.close();
    await Promise.all(procs.map((p) => stopProc(p)));
    await rx?.close();
  });

  it('shows an enqueued webhook live, counts it on the Overview, and tells its retry in the Inspector', async () => {
    const config = uniq('fleet');
    const { page, problems, close } = await openPage(browser);
    await page.goto(`${base}/console/deliveries?config_id=${config}`);
    await expect.poll(() => page.getByTestId('live').textContent(), { timeout: 15_000 }).toContain('Live:');
    await page.waitForTimeout(600); // the feed's first read of this config is its baseline
    const { status, body } = await post(base, `/webhooks/${config}/enqueue`, { endpoint: rx.url('/flaky'), payload: { order: 7 } });
    expect(status).toBe(202);
    const row = page.getByRole('row', { name: new RegExp(body.webhook_id) });
    await expect.poll(() => row.count(), { timeout: 20_000 }).toBe(1);
    await expect.poll(() => row.textContent(), { timeout: 30_000 }).toContain('delivered');

    await page.getByRole('link', { name: `Inspect ${body.webhook_id}` }).click();
    const story = page.getByTestId('story');
    await expect.poll(() => story.textContent(), { timeout: 10_000 }).toContain('delivered.');
    const lines = await story.locator('li').allTextContents();
    expect(lines[0]).toMatch(/^Attempt 1 at \d\d:\d\d:\d\d got 503 after .*; the next try is at .*, 300 ms later: backoff 300 ms × 2⁰\.$/);
    expect(lines[1]).toMatch(/^Attempt 2 at .* got 200 after .*: delivered\.$/);

    await page.keyboard.press('o');
    await expect.poll(() => page.getByTestId('summary').textContent(), { timeout: 15_000 }).toMatch(/Last hour: [1-9]\d* enqueued, [1-9]\d* delivered, [1-9]\d* failed attempts/);
    await expectAccessible(page);
    expect(problems).toEqual([]);
    await close();
  });
});
