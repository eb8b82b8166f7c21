import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookId } from '../../core/domain/ids';
import { keys } from '../../core/domain/keys';
import { shardOf } from '../../core/domain/retry-shards';
import type { Webhook } from '../../core/domain/webhook';
import { encodeWebhook } from '../../core/records/webhook';
import { runScheduler } from '../../core/pipeline/scheduler';
import { topicSpecs } from '../../core/pipeline/topics';
import { systemClock } from '../../core/ports/clock';
import type { HotState } from '../../core/ports/hot-state';
import type { ConsumedRecord } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import { KafkaLog } from '../../workers/kafka/log';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { testConfig } from '../helpers/fleet';
import { useRedisDb } from '../helpers/redis-db';

// Three schedulers on real Redis + Kafka sharing the retry shards under leases: every due retry
// moved once, a killed scheduler's shards taken over after its lease, and retries left in the
// schedule kept before the shards (a running system upgraded) moved too.

const SHARDS = 16;
const TTLS = { status_ttl: 60_000, stats_ttl: 60_000, retry_data_ttl: 600_000, retry_shards: SHARDS };
const SHARD_LEASE = 1_500;

const hook = (n: number): Webhook => ({
  id: webhookId(),
  config_id: `c${n % 7}`,
  endpoint: 'http://127.0.0.1:9/x',
  endpoint_hash: 'h',
  payload: `{"n":${n}}`,
  headers: {},
  attempt: 1,
  max_attempts: 5,
  deferrals: 0,
  created_at: new Date().toISOString(),
  scheduled_at: new Date().toISOString(),
});

describe('howk-scheduler on a sharded retry schedule', () => {
  const config = testConfig('kafka', {
    'scheduler.batch_size': 200,
    'scheduler.poll_interval': 100,
    'scheduler.lease': 5_000,
    'scheduler.shard_lease': SHARD_LEASE,
    'redis.retry_shards': SHARDS,
  });
  const kafka = new KafkaLog({ brokers: config.kafka.brokers, clientId: 'sched-shards', produceTimeoutMs: 5000, maxWaitMs: 20, maxBytesPerPartition: 1 << 20 });
  const db = useRedisDb();
  const states: RedisHotState[] = [];
  const pending: ConsumedRecord[] = [];
  const collector = kafka.consumer({ groupId: uniq('sched-shards'), topics: [config.kafka.topics.pending], fromBeginning: true });
  const movedIds = () => pending.map((r) => (JSON.parse(r.value!) as { id: string }).id);
  const state = () => {
    const s = new RedisHotState(createRedis(requireEnv('REDIS_URL'), { db: db() }), TTLS);
    states.push(s);
    return s;
  };
  /** A scheduler; `kill` stops it as a dead process would: without giving its shards back. */
  const scheduler = (owner: string) => {
    const hot = state();
    const abort = new AbortController();
    let dead = false;
    const gated = new Proxy(hot, { get: (t, p) => (dead && p === 'releaseShards' ? async () => {} : (Reflect.get(t, p) as unknown)) }) as unknown as HotState;
    const loop = runScheduler({ config, hot: gated, producer: kafka.producer(), clock: systemClock, log: silentLogger, owner }, abort.signal);
    return {
      stop: async () => (abort.abort(), await loop),
      kill: async () => ((dead = true), abort.abort(), await loop),
    };
  };

  beforeAll(async () => {
    await kafka.admin.ensureTopics(topicSpecs(config));
    await collector.run(async (batch) => {
      pending.push(...batch.records);
    });
  });
  afterAll(async () => {
    await collector.stop();
    await kafka.close();
    await Promise.all(states.map((s) => s.close()));
  });

  it("3 schedulers move 3,000 due retries, each once; a killed one's shards are taken over after its lease", async () => {
    const admin = state();
    const first = Array.from({ length: 3000 }, (_, i) => hook(i));
    await admin.apply({ retries: first.map((w) => ({ id: w.id, dueAt: Date.now() - 10, data: encodeWebhook(w) })) });
    const scheds = ['a', 'b', 'c'].map((o) => scheduler(`sched-${o}`));
    await waitFor(async () => (await admin.retryCount()) === 0 && pending.length >= 3000, { timeoutMs: 60_000, what: 'all 3,000 moved' });
    // The shards end up shared by the three (one lease per shard, so none is held twice). The
    // first to start may hold them all for a while: each gives back its surplus at its next
    // renewal, a third of the shard lease later, which a loaded machine can stretch.
    const redis = (admin as unknown as { redis: { get(k: string): Promise<string | null>; pttl(k: string): Promise<number> } }).redis;
    const leases = () => Promise.all(Array.from({ length: SHARDS }, (_, s) => redis.get(keys.retryShardLease(s))));
    await waitFor(async () => new Set((await leases()).filter(Boolean)).size === 3, { timeoutMs: 20_000, what: 'the shards shared by sched-a, sched-b and sched-c' });

    // Kill c: its shards stay leased to it until the lease runs out.
    await scheds[2]!.kill();
    const cShards = (await leases()).flatMap((o, s) => (o === 'sched-c' ? [s] : []));
    expect(cShards.length).toBeGreaterThan(0);
    const killedAt = Date.now();
    // What is left of its leases: c renewed them at most a third of a lease before it died.
    const left = Math.min(...(await Promise.all(cShards.map((sh) => redis.pttl(keys.retryShardLease(sh))))));
    expect(left).toBeGreaterThan(0);
    const second: Webhook[] = [];
    while (second.length < 300) {
      const w = hook(second.length);
      if (cShards.includes(shardOf(w.id, SHARDS))) second.push(w);
    }
    await admin.apply({ retries: second.map((w) => ({ id: w.id, dueAt: Date.now() - 10, data: encodeWebhook(w) })) });
    // Not before: the shards are still the dead one's until its leases run out.
    await new Promise((r) => setTimeout(r, Math.max(0, killedAt + left - 250 - Date.now())));
    expect(pending.length).toBe(3000);
    await waitFor(async () => (await admin.retryCount()) === 0 && pending.length >= 3300, { timeoutMs: 60_000, what: "the killed scheduler's shards drained by the others" });
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(left - 100);
    await Promise.all([scheds[0]!.stop(), scheds[1]!.stop()]);
    await new Promise((r) => setTimeout(r, 500));
    const ids = movedIds();
    expect(ids).toHaveLength(3300);
    expect(new Set(ids)).toEqual(new Set([...first, ...second].map((w) => w.id)));
  }, 120_000);

  it('moves retries a running system still had in the schedule kept before the shards', async () => {
    pending.length = 0;
    const admin = createRedis(requireEnv('REDIS_URL'), { db: db() });
    const old = Array.from({ length: 500 }, (_, i) => hook(i));
    const later = hook(9999);
    // As the version before the shards wrote them: one zset, data beside it.
    const p = admin.pipeline();
    for (const w of old) p.set(keys.retryData(w.id), encodeWebhook(w), 'PX', 600_000).zadd(keys.retries(), Date.now() - 10, w.id);
    p.set(keys.retryData(later.id), encodeWebhook(later), 'PX', 600_000).zadd(keys.retries(), Date.now() + 600_000, later.id);
    await p.exec();
    const s = scheduler('sched-upgraded');
    await waitFor(() => pending.length >= 500, { timeoutMs: 60_000, what: 'the pre-shard retries moved' });
    await s.stop();
    await new Promise((r) => setTimeout(r, 300));
    expect(movedIds().sort()).toEqual(old.map((w) => w.id).sort());
    expect(await admin.zcard(keys.retries())).toBe(0);
    // Not due yet: in its shard, due when it was.
    expect(Number(await admin.zscore(keys.retryShard(shardOf(later.id, SHARDS)), later.id))).toBeGreaterThan(Date.now() + 500_000);
    await admin.quit();
  }, 90_000);
});
