import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { createRedis } from '../../workers/redis/client';
import { requireEnv, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { scheduledIds } from '../helpers/retry-keys';

// Redis loses everything in the middle of deliveries (FLUSHDB of this fleet's own db: the
// shared server is never flushed whole). The sentinel notices, the fleet rebuilds from
// howk.state and howk.deadletter, and every webhook ends as it would have: the ones mid-retry
// are delivered, dead letters stay listable, and no webhook delivered before the loss -
// with its snapshot and tombstone both still in the uncompacted topic - is sent again.
describe('rebuild after a Redis loss (real Kafka + Redis)', () => {
  const N = 15;
  let rx: Receiver;
  let f: TestFleet;
  let redis: Redis;
  let holding = true;
  const ids: Record<string, string[]> = { ok: [], flaky: [], hold: [], bad: [], exhaust: [] };

  beforeAll(async () => {
    rx = await startReceiver((r) => {
      const attempt = Number(r.headers['x-webhook-attempt']);
      if (r.path === '/flaky') return { status: attempt <= 2 ? 503 : 200 };
      if (r.path === '/hold') return { status: holding ? 503 : 200 };
      if (r.path === '/bad') return { status: 400, body: 'no such customer' };
      if (r.path === '/exhaust') return { status: 503 };
      return { status: 200 };
    });
    f = await startTestFleet('kafka', {
      overrides: { 'reconciler.sentinel_interval': 250, 'reconciler.restore_delay': 300, 'retry.base_delay': 150, 'retry.max_delay': 1500, 'circuit_breaker.enabled': false },
    });
    redis = createRedis(requireEnv('REDIS_URL'), { db: f.redisDb });
  });

  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    await redis?.quit();
  });

  const sentTo = (id: string) => rx.received.filter((r) => r.headers['webhook-id'] === id).length;
  const get = async (path: string) => (await fetch(f.baseUrl + path)).json() as Promise<any>;

  it('restores what was in flight, and nothing that had ended', async () => {
    expect(await redis.exists(keys.canary())).toBe(1);
    for (const [kind, maxAttempts] of [
      ['ok', 5],
      ['flaky', 5],
      ['hold', 30],
      ['bad', 5],
      ['exhaust', 2],
    ] as const) {
      const res = await f.post('/webhooks/rb/enqueue/batch', {
        webhooks: Array.from({ length: N }, (_, i) => ({ endpoint: rx.url(`/${kind}`), payload: { kind, i }, max_attempts: maxAttempts })),
      });
      expect(res.status).toBe(202);
      ids[kind] = ((await res.json()) as any).results.map((r: any) => r.webhook_id);
    }
    const status = (id: string) => f.hot.getStatus(id);
    await waitFor(async () => (await Promise.all([...ids.ok!, ...ids.flaky!].map(status))).every((s) => s?.state === 'delivered'), {
      timeoutMs: 60_000,
      what: 'ok and flaky delivered',
    });
    await waitFor(async () => (await Promise.all([...ids.bad!, ...ids.exhaust!].map(status))).every((s) => s?.state === 'failed' || s?.state === 'exhausted'), {
      timeoutMs: 60_000,
      what: 'dead letters',
    });
    await waitFor(async () => (await Promise.all(ids.hold!.map(status))).every((s) => s?.state === 'retrying' && s.attempts >= 2), { timeoutMs: 60_000, what: 'hold mid-retry' });
    const before = new Map([...ids.ok!, ...ids.flaky!, ...ids.bad!, ...ids.exhaust!].map((id) => [id, sentTo(id)]));

    const lostAt = Date.now();
    await redis.flushdb();
    await waitFor(async () => (await redis.exists(keys.canary())) === 1, { timeoutMs: 30_000, what: 'canary restored by the sentinel' });
    const recovered = Date.now() - lostAt;

    // Only webhooks that were mid-retry are scheduled again (some may be on their way
    // through the pending topic at this instant, hence a subset).
    const scheduled = await scheduledIds(redis);
    expect(scheduled.length).toBeGreaterThan(0);
    for (const id of scheduled) expect(ids.hold).toContain(id);
    for (const id of ids.hold!) expect((await status(id))?.state).toBe('retrying');
    // Dead letters: listable, their statuses back.
    const dl = await get('/deadletter?config_id=rb&limit=100');
    expect(dl.items.map((d: any) => d.webhook_id).sort()).toEqual([...ids.bad!, ...ids.exhaust!].sort());
    expect(await status(ids.exhaust![0]!)).toMatchObject({ state: 'exhausted', attempts: 2 });
    expect(await status(ids.bad![0]!)).toMatchObject({ state: 'failed', dead_reason: 'unrecoverable' });
    const retrying = await get('/webhooks?config_id=rb&state=retrying&limit=100');
    expect(retrying.items.map((s: any) => s.webhook_id).sort()).toEqual([...ids.hold!].sort());

    holding = false;
    await waitFor(async () => (await Promise.all(ids.hold!.map(status))).every((s) => s?.state === 'delivered'), { timeoutMs: 60_000, what: 'hold delivered after the rebuild' });
    // Nothing that had ended before the loss was sent again.
    for (const [id, n] of before) expect(sentTo(id)).toBe(n);
    expect(await f.hot.retryCount()).toBe(0);
    console.log(`rebuild after FLUSHDB: canary back in ${recovered} ms; ${ids.hold!.length} mid-retry webhooks restored and delivered; 0 resurrected`);
  });
});
