import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeWebhook } from '../../core/records/webhook';
import { startWorker } from '../../core/pipeline/worker';
import { createSchedulerTick } from '../../core/pipeline/scheduler';
import { topicSpecs } from '../../core/pipeline/topics';
import { systemClock } from '../../core/ports/clock';
import type { LogProducer } from '../../core/ports/log';
import { createLogger, silentLogger } from '../../core/ports/logger';
import { KafkaLog } from '../../workers/kafka/log';
import { createRedis } from '../../workers/redis/client';
import { redisEndedLookup } from '../../workers/redis/ended-lookup';
import { RedisHotState } from '../../workers/redis/hot-state';
import { createHttpSender } from '../../workers/node/sender';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { testConfig } from '../helpers/fleet';
import { releaseRedisDb, takeRedisDb } from '../helpers/redis-db';
import { hook } from '../helpers/reconcile-fixtures';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Real Kafka + Redis. Worker A gets a 2xx for every webhook and never makes an outcome
// durable: its outcome produce always fails (a worker killed between the answer and its
// outcome's produce, the window kill -9 hits), and it stops without committing. Worker B then
// consumes the same records. Before sent marks, B sent every one again; with them, B finds
// A's mark of each pass in Redis, writes the delivered outcome and sends nothing.

const N = 16;
const failing = (inner: LogProducer): LogProducer => ({
  send: () => Promise.reject(new Error('produce failed: the worker is about to die')),
  close: () => inner.close(),
});

describe('a pass answered 2xx whose worker died before its outcome was durable', () => {
  let rx: Receiver;
  let db: number;
  beforeAll(async () => {
    requireEnv('KAFKA_BROKERS');
    db = await takeRedisDb();
    rx = await startReceiver(() => ({ status: 200 }));
  });
  afterAll(async () => {
    await rx?.close();
    await releaseRedisDb(db);
  });

  const setup = async (name: string, patch: Record<string, unknown> = {}) => {
    // No handoff on a slow machine: a handoff's outcome flush retries as long as the process
    // lives, so A (whose produce never succeeds) could not stop.
    const config = testConfig('kafka', {
      'kafka.partitions': 2,
      'worker.lanes': 'fast',
      'kafka.session_timeout': 6000,
      'delivery.straggler_after': 60_000,
      'delivery.batch_time_limit': 60_000,
      ...patch,
    });
    const redis = createRedis(requireEnv('REDIS_URL'), { db, commandTimeoutMs: 2000 });
    await redis.flushdb();
    const hot = new RedisHotState(redis, { status_ttl: config.ttl.status_ttl, stats_ttl: config.ttl.stats_ttl, retry_data_ttl: config.ttl.retry_data_ttl });
    const ended = redisEndedLookup(redis, config.ttl.status_ttl);
    const kafka = (id: string) => new KafkaLog({ brokers: config.kafka.brokers, clientId: uniq(id), produceTimeoutMs: 5000, maxWaitMs: 20, maxBytesPerPartition: 1 << 20 });
    const logA = kafka(`${name}-a`);
    const logB = kafka(`${name}-b`);
    await logA.admin.ensureTopics(topicSpecs(config));
    const sender = createHttpSender({ connectionsPerOrigin: 8, snippetBytes: 1024, allowedNetworks: config.delivery.allowed_networks });
    const deps = { config, hot, sender, clock: systemClock, log: process.env.DEBUG_SM ? createLogger(name, 'info') : silentLogger, ended };
    const ids = Array.from({ length: N }, (_, i) => uniq(`wh_${name}_${i}`));
    const before = rx.received.length;
    const hits = () => {
      const m = new Map<string, number>();
      for (const r of rx.received.slice(before)) m.set(String(r.headers['webhook-id']), (m.get(String(r.headers['webhook-id'])) ?? 0) + 1);
      return m;
    };
    const close = async () => {
      await Promise.all([logA.close(), logB.close()]);
      redis.disconnect();
    };
    return { config, hot, ended, logA, logB, deps, ids, hits, close };
  };

  const produce = async (log: KafkaLog, topic: string, ids: string[], headers?: Record<string, string>) => {
    const client = log.producer();
    await client.send(
      ids.map((id, i) => ({
        topic,
        key: `cfg-${i % 4}`,
        value: encodeWebhook(hook(id, { config_id: `cfg-${i % 4}`, attempt: 0, endpoint: rx.url(`/h/${i % 4}`), endpoint_hash: String(i % 4).padEnd(32, '0') })),
        ...(headers ? { headers } : {}),
      })),
    );
    await client.close();
  };

  it('is not sent again by the next owner of the partition: every webhook reaches the endpoint once, and ends delivered', async () => {
    const s = await setup('owner');
    try {
      await produce(s.logA, s.config.kafka.topics.pending, s.ids);
      const a = await startWorker({ ...s.deps, logStore: s.logA, producer: failing(s.logA.producer()) });
      await waitFor(() => s.hits().size === N, { timeoutMs: 30_000, what: 'worker A sending every webhook' });
      // A stops with its outcomes not written and its offsets not committed.
      await a.stop();
      expect((await s.ended.endedAttempts(s.ids)).size).toBe(0);
      const b = await startWorker({ ...s.deps, logStore: s.logB, producer: s.logB.producer() });
      try {
        await waitFor(async () => (await s.ended.endedAttempts(s.ids)).size === N, { timeoutMs: 40_000, what: 'worker B writing every outcome' });
      } finally {
        await b.stop();
      }
      expect([...s.hits()].filter(([, n]) => n !== 1)).toEqual([]);
      const status = await s.hot.getStatus(s.ids[0]!);
      expect(status).toMatchObject({ state: 'delivered', attempts: 1 });
    } finally {
      await s.close();
    }
  }, 120_000);

  it('is not sent again when the scheduler puts its handoff lease back after the worker died', async () => {
    const s = await setup('lease');
    try {
      // The delivery, answered 2xx, leased (A died before its outcome): the lease is due now.
      await produce(s.logA, s.config.kafka.topics.pending, s.ids);
      const a = await startWorker({ ...s.deps, logStore: s.logA, producer: failing(s.logA.producer()) });
      await waitFor(() => s.hits().size === N, { timeoutMs: 30_000, what: 'worker A sending every webhook' });
      await a.stop();
      // Its records committed past (they stand for batches A had leased and committed): only the scheduler's copies come again.
      const admin = new Kafka({ clientId: uniq('offsets'), brokers: s.config.kafka.brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.resetOffsets({ groupId: s.config.kafka.consumer_group, topic: s.config.kafka.topics.pending, earliest: false });
      await admin.disconnect();
      const now = Date.now();
      await s.hot.apply({
        retries: s.ids.map((id, i) => ({
          id,
          dueAt: now - 1,
          data: encodeWebhook(hook(id, { config_id: `cfg-${i % 4}`, attempt: 0, endpoint: rx.url(`/h/${i % 4}`), endpoint_hash: String(i % 4).padEnd(32, '0') })),
        })),
      });
      const b = await startWorker({ ...s.deps, logStore: s.logB, producer: s.logB.producer() });
      try {
        const tick = createSchedulerTick({ config: s.config, hot: s.hot, producer: s.logB.producer(), clock: systemClock, log: silentLogger });
        await waitFor(async () => (await tick()) === 0 && (await s.ended.endedAttempts(s.ids)).size === N, { timeoutMs: 40_000, what: 'the leases put back and ended' });
      } finally {
        await b.stop();
      }
      expect([...s.hits()].filter(([, n]) => n !== 1)).toEqual([]);
    } finally {
      await s.close();
    }
  }, 120_000);
});
