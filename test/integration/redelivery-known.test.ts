import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeWebhook } from '../../core/records/webhook';
import { startWorker } from '../../core/pipeline/worker';
import { topicSpecs } from '../../core/pipeline/topics';
import { systemClock } from '../../core/ports/clock';
import type { EndedLookup } from '../../core/ports/hot-state';
import type { LogProducer } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
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

// Real Kafka + Redis. Worker A delivers a batch (every endpoint answers 200); its outcome
// produce fails once, so the batch's commit comes late (kafka.commit_interval 10 s here
// stands for any late commit: an outage, a slow broker). Worker B joins the group before
// that commit and takes one of the two partitions from the last committed offset (none: the
// beginning). B reads the stored statuses of that partition's first records (the batch may
// have been seen) and sends none of the webhooks A delivered. Before, B sent them again.

const N = 24;

describe('a batch consumed again by the next owner of its partition', () => {
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

  it('is not sent again when its outcome produce failed once and the partition moved before the commit: every webhook reaches the endpoint exactly once', async () => {
    const config = testConfig('kafka', { 'kafka.partitions': 2, 'kafka.commit_interval': 10_000, 'worker.lanes': 'fast', 'kafka.session_timeout': 6000 });
    const redis = createRedis(requireEnv('REDIS_URL'), { db, commandTimeoutMs: 2000 });
    await redis.flushdb();
    const hot = new RedisHotState(redis, { status_ttl: config.ttl.status_ttl, stats_ttl: config.ttl.stats_ttl, retry_data_ttl: config.ttl.retry_data_ttl });
    const ended = redisEndedLookup(redis);
    const looked: string[] = [];
    const counting: EndedLookup = { endedAttempts: (ids) => (looked.push(...ids), ended.endedAttempts(ids)) };
    const kafka = (id: string) => new KafkaLog({ brokers: config.kafka.brokers, clientId: uniq(id), produceTimeoutMs: 5000, maxWaitMs: 20, maxBytesPerPartition: 1 << 20 });
    const logA = kafka('worker-a');
    const logB = kafka('worker-b');
    await logA.admin.ensureTopics(topicSpecs(config));
    const sender = createHttpSender({ connectionsPerOrigin: 8, snippetBytes: 1024, allowedNetworks: config.delivery.allowed_networks });
    const inner = logA.producer();
    let failures = 0;
    const failingOnce: LogProducer = {
      send: (records) => (failures++ === 0 ? Promise.reject(new Error('produce failed: broker unreachable')) : inner.send(records)),
      close: () => inner.close(),
    };
    const deps = { config, hot, sender, clock: systemClock, log: silentLogger };
    const a = await startWorker({ ...deps, logStore: logA, producer: failingOnce, ended: counting });
    const b: { stop?: () => Promise<void> } = {};
    const client = logA.producer();
    try {
      const ids = Array.from({ length: N }, (_, i) => `wh_known_${i}`);
      await client.send(
        ids.map((id, i) => ({
          topic: config.kafka.topics.pending,
          key: `cfg-${i % 8}`,
          value: encodeWebhook(hook(id, { config_id: `cfg-${i % 8}`, attempt: 0, endpoint: rx.url(`/h/${i % 8}`), endpoint_hash: String(i % 8).padEnd(32, '0') })),
        })),
      );
      const hits = () => {
        const m = new Map<string, number>();
        for (const r of rx.received) m.set(String(r.headers['webhook-id']), (m.get(String(r.headers['webhook-id'])) ?? 0) + 1);
        return m;
      };
      await waitFor(() => hits().size === N, { timeoutMs: 30_000, what: 'worker A delivering every webhook' });
      await waitFor(async () => (await ended.endedAttempts(ids)).size === N, { timeoutMs: 30_000, what: "worker A's outcomes written (after one failed produce)" });
      expect(failures).toBeGreaterThan(1);
      // Worker B joins before A's commit: one partition moves to it.
      looked.length = 0;
      Object.assign(b, await startWorker({ ...deps, logStore: logB, producer: logB.producer(), ended: counting }));
      const admin = new Kafka({ clientId: uniq('check'), brokers: config.kafka.brokers, logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      await waitFor(
        async () => {
          const [g] = (await admin.describeGroups([config.kafka.consumer_group])).groups;
          return g?.state === 'Stable' && g.members.length === 2;
        },
        { timeoutMs: 30_000, what: 'both workers in the group' },
      );
      // Until the group has committed every record of both partitions (commits every 10 s).
      const ends = await admin.fetchTopicOffsets(config.kafka.topics.pending);
      await waitFor(
        async () => {
          const [t] = await admin.fetchOffsets({ groupId: config.kafka.consumer_group, topics: [config.kafka.topics.pending] });
          return ends.every((e) => t!.partitions.find((p) => p.partition === e.partition)?.offset === e.high);
        },
        { timeoutMs: 40_000, intervalMs: 250, what: 'every record committed' },
      );
      await admin.disconnect();
      const twice = [...hits()].filter(([, n]) => n !== 1);
      expect(twice).toEqual([]);
      expect(hits().size).toBe(N);
      // B did consume the moved partition again (from the start) and looked its records up.
      expect(looked.length).toBeGreaterThan(0);
    } finally {
      await Promise.all([a.stop(), b.stop?.()]);
      await client.close();
      await Promise.all([logA.close(), logB.close()]);
      redis.disconnect();
    }
  }, 120_000);
});
