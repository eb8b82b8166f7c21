import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { shardOf } from '../../core/domain/retry-shards';
import { orphanGrace } from '../../core/reconcile/orphans';
import { createRedis } from '../../workers/redis/client';
import { requireEnv, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// The safety net for orphaned retries, on real Kafka and Redis: a webhook whose snapshot on
// howk.state says it is due while Redis has lost its schedule entry and data (what the races
// of docs/RELIABILITY.md left behind) is delivered by the scheduler's sweep within grace +
// interval; webhooks that something in Redis still carries (a lease, an in-flight record) are
// left alone.
describe('orphan sweep (real Kafka + Redis)', () => {
  let rx: Receiver;
  let f: TestFleet;
  let redis: Redis;
  const SWEEP_MS = 500;

  beforeAll(async () => {
    // First attempt of each webhook fails; later ones succeed.
    rx = await startReceiver((r) => ({ status: Number(r.headers['x-webhook-attempt']) <= 1 ? 503 : 200 }));
    f = await startTestFleet('kafka', {
      overrides: {
        'retry.base_delay': 1500,
        'retry.max_delay': 1500,
        'retry.jitter': 0,
        'scheduler.poll_interval': 200,
        'scheduler.lease': 1000,
        'delivery.timeout': 2000,
        'delivery.handoff_lease': 1000,
        'concurrency.inflight_ttl': 3000,
        'circuit_breaker.enabled': false,
        'reconciler.orphan_sweep_interval': SWEEP_MS,
        'reconciler.orphan_grace': 0,
      },
    });
    redis = createRedis(requireEnv('REDIS_URL'), { db: f.redisDb });
  });

  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    await redis?.quit();
  });

  const sentTo = (id: string) => rx.received.filter((r) => r.headers['webhook-id'] === id).length;
  const shardKey = (id: string) => keys.retryShard(shardOf(id, f.config.redis.retry_shards));
  const repairs = async () => Number(/^howk_orphaned_retries_repaired_total (\d+)/m.exec((await f.fleet.metrics.exposition()).body)?.[1] ?? NaN);

  /** Enqueues webhooks and waits until each failed its first attempt, is scheduled, and its snapshot is on howk.state. */
  const retrying = async (n: number): Promise<{ id: string; dueAt: number }[]> => {
    const res = await f.post('/webhooks/orph/enqueue/batch', { webhooks: Array.from({ length: n }, (_, i) => ({ endpoint: rx.url('/x'), payload: { i }, max_attempts: 5 })) });
    expect(res.status).toBe(202);
    const ids: string[] = ((await res.json()) as any).results.map((r: any) => r.webhook_id);
    const out: { id: string; dueAt: number }[] = [];
    await waitFor(
      async () => {
        out.length = 0;
        for (const id of ids) {
          const score = await redis.zscore(shardKey(id), id);
          const onState = f.records('state').some((r) => r.key === id && r.value !== null);
          if (score === null || !onState || (await f.hot.getStatus(id))?.state !== 'retrying') return false;
          out.push({ id, dueAt: Number(score) });
        }
        return true;
      },
      { timeoutMs: 20_000, what: 'first attempts failed and retries scheduled' },
    );
    return out;
  };

  /** What the races left behind: the status says retrying, Redis schedules nothing. */
  const orphan = async (id: string) => {
    const s = shardOf(id, f.config.redis.retry_shards);
    const cfg = keys.shardConfigRetries(s, 'orph');
    await redis.multi().zrem(keys.retryShard(s), id).del(keys.shardRetryData(s, id)).zrem(cfg, id).exec();
  };

  it('schedules an orphaned retry again and delivers it within grace + interval', async () => {
    const [w] = await retrying(1);
    await orphan(w!.id);
    expect(await redis.zscore(shardKey(w!.id), w!.id)).toBeNull();
    const before = await repairs();
    const grace = orphanGrace(f.config);
    // The bound: grace past the due time, one sweep interval, the sweep's own read of
    // howk.state and a scheduler poll; the slack is for a loaded shared machine.
    const bound = w!.dueAt + grace + SWEEP_MS + 15_000;
    await waitFor(async () => (await f.hot.getStatus(w!.id))?.state === 'delivered', { timeoutMs: bound - Date.now(), what: 'orphan delivered' });
    expect(Date.now()).toBeLessThan(bound);
    expect(Date.now()).toBeGreaterThanOrEqual(w!.dueAt + grace);
    expect(sentTo(w!.id)).toBe(2);
    expect(await repairs()).toBe(before + 1);
  }, 60_000);

  it('leaves a leased webhook alone while it repairs an orphan beside it (no duplicate, no second schedule)', async () => {
    const [leased, lost] = await retrying(2);
    // A lease far ahead (what a scheduler's claim or a handoff renewal leaves: the entry re-scored).
    const leaseUntil = Date.now() + 60_000;
    await redis.zadd(shardKey(leased!.id), 'XX', leaseUntil, leased!.id);
    await orphan(lost!.id);
    const before = await repairs();
    const grace = orphanGrace(f.config);
    await waitFor(async () => (await f.hot.getStatus(lost!.id))?.state === 'delivered', {
      timeoutMs: lost!.dueAt + grace + SWEEP_MS + 15_000 - Date.now(),
      what: 'orphan delivered',
    });
    // Several sweeps have looked at the leased one, long past its snapshot's due time.
    await new Promise((r) => setTimeout(r, 4 * SWEEP_MS));
    expect(Date.now()).toBeGreaterThan(leased!.dueAt + grace);
    expect(await redis.zscore(shardKey(leased!.id), leased!.id)).toBe(String(leaseUntil));
    expect(sentTo(leased!.id)).toBe(1);
    expect((await f.hot.getStatus(leased!.id))?.state).toBe('retrying');
    expect(await repairs()).toBe(before + 1);
  }, 60_000);

  it('counts an unexpired in-flight record as carrying the webhook, an expired one not', async () => {
    const [w] = await retrying(1);
    await orphan(w!.id);
    const hash = (await f.hot.getStatus(w!.id))!.endpoint_hash;
    const now = Date.now();
    await redis.zadd(keys.inflight(hash), now + 30_000, w!.id);
    expect((await f.hot.unscheduled([{ id: w!.id, endpointHash: hash }], now)).has(w!.id)).toBe(false);
    await redis.zadd(keys.inflight(hash), now - 1, w!.id);
    expect((await f.hot.unscheduled([{ id: w!.id, endpointHash: hash }], now)).get(w!.id)?.state).toBe('retrying');
    await redis.zrem(keys.inflight(hash), w!.id);
  }, 60_000);
});
