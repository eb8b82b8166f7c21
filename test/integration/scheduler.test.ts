import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webhookId } from '../../core/domain/ids';
import { encodeWebhook, type Webhook } from '../../core/records/webhook';
import { silentLogger } from '../../core/ports/logger';
import { createSchedulerTick } from '../../core/pipeline/scheduler';
import { topicSpecs } from '../../core/pipeline/topics';
import { systemClock } from '../../core/ports/clock';
import type { ConsumedRecord } from '../../core/ports/log';
import { KafkaLog } from '../../workers/kafka/log';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { testConfig } from '../helpers/fleet';
import { useRedisDb } from '../helpers/redis-db';

const TTLS = { status_ttl: 60_000, stats_ttl: 60_000, retry_data_ttl: 600_000 };

const hook = (n: number): Webhook => ({
  id: webhookId(),
  config_id: `c${n % 5}`,
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

// Schedulers on real Redis + Kafka: concurrent passes never move a retry twice, and a
// scheduler that dies between claim and produce loses nothing.
describe('howk-scheduler', () => {
  const config = testConfig('kafka', { 'scheduler.batch_size': 100, 'scheduler.lease': 1000 });
  const kafka = new KafkaLog({ brokers: config.kafka.brokers, clientId: 'sched', produceTimeoutMs: 5000, maxWaitMs: 20, maxBytesPerPartition: 1 << 20 });
  const db = useRedisDb();
  let a: RedisHotState;
  let b: RedisHotState;
  const pending: ConsumedRecord[] = [];
  const collector = kafka.consumer({ groupId: uniq('sched-collector'), topics: [config.kafka.topics.pending], fromBeginning: true });

  beforeAll(async () => {
    a = new RedisHotState(createRedis(requireEnv('REDIS_URL'), { db: db() }), TTLS);
    b = new RedisHotState(createRedis(requireEnv('REDIS_URL'), { db: db() }), TTLS);
    await kafka.admin.ensureTopics(topicSpecs(config));
    await collector.run(async (batch) => {
      pending.push(...batch.records);
    });
  });
  afterAll(async () => {
    await collector.stop();
    await kafka.close();
    await a?.close();
    await b?.close();
  });

  it('two schedulers racing over 1,000 due retries move each exactly once', async () => {
    const hooks = Array.from({ length: 1000 }, (_, i) => hook(i));
    await a.apply({ retries: hooks.map((w) => ({ id: w.id, dueAt: Date.now() - 10, data: encodeWebhook(w) })) });
    const tickA = createSchedulerTick({ config, hot: a, producer: kafka.producer(), clock: systemClock, log: silentLogger });
    const tickB = createSchedulerTick({ config, hot: b, producer: kafka.producer(), clock: systemClock, log: silentLogger });
    let moved = 0;
    for (;;) {
      const [x, y] = await Promise.all([tickA(), tickB()]);
      moved += x + y;
      if (x + y === 0) break;
    }
    expect(moved).toBe(1000);
    await waitFor(() => pending.length >= 1000, { what: '1,000 records on the pending topic' });
    await new Promise((r) => setTimeout(r, 500));
    const ids = pending.map((r) => JSON.parse(r.value!).id);
    expect(new Set(ids).size).toBe(1000);
    expect(ids).toHaveLength(1000);
    expect(await a.retryCount()).toBe(0);
  });

  it('a scheduler that dies after claiming loses nothing: the lease runs out and another pass moves them', async () => {
    pending.length = 0;
    const hooks = Array.from({ length: 50 }, (_, i) => hook(i));
    await a.apply({ retries: hooks.map((w) => ({ id: w.id, dueAt: Date.now() - 10, data: encodeWebhook(w) })) });
    // "Crash": claimed under a 1 s lease, never produced, never acked.
    const claimed = await a.claimDueRetries(Date.now(), 100, config.scheduler.lease);
    expect(claimed).toHaveLength(50);
    const tick = createSchedulerTick({ config, hot: b, producer: kafka.producer(), clock: systemClock, log: silentLogger });
    expect(await tick()).toBe(0);
    await new Promise((r) => setTimeout(r, config.scheduler.lease + 50));
    expect(await tick()).toBe(50);
    await waitFor(() => pending.length >= 50, { what: 'the reclaimed retries on the pending topic' });
    expect(new Set(pending.map((r) => JSON.parse(r.value!).id))).toEqual(new Set(hooks.map((w) => w.id)));
    // Records keep the config as key, so per-config ordering survives a retry.
    expect(pending.every((r) => r.key === JSON.parse(r.value!).config_id)).toBe(true);
  });
});
