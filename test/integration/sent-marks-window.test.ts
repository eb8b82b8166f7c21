import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeWebhook } from '../../core/records/webhook';
import { startWorker } from '../../core/pipeline/worker';
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

// Real Kafka + Redis. Worker A handles a partition whose first batch never resolves (its
// outcome produce keeps failing: the batch a stalled or dying worker never finishes), while
// every later batch delivers and writes its outcomes. None of them can commit behind the
// first, so A handles many more records than kafka.max_unresolved without committing any.
// A stops; worker B takes the partition from offset 0. Before, B looked up only its first
// max_unresolved records and sent every later one a second time (the full kill -9 chaos run
// that made 510 duplicates in one burst); now every record below the partition's high-water
// mark at B's first fetch is looked up, and nothing reaches the endpoint twice.

const MAX_UNRESOLVED = 20;
const SENDS = 20;
const PER_SEND = 10;
const N = SENDS * PER_SEND;

describe('a partition whose head batch never resolved, taken over by a new owner', () => {
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

  it(`is not sent again past the first max_unresolved (${MAX_UNRESOLVED}) records: each of ${N} webhooks reaches the endpoint once and ends delivered`, async () => {
    const config = testConfig('kafka', {
      'kafka.partitions': 1,
      'kafka.max_unresolved': MAX_UNRESOLVED,
      'worker.lanes': 'fast',
      'kafka.session_timeout': 6000,
      // No handoff: the head batch must stay unresolved (a handoff would commit it).
      'delivery.straggler_after': 60_000,
      'delivery.batch_time_limit': 60_000,
    });
    const redis = createRedis(requireEnv('REDIS_URL'), { db, commandTimeoutMs: 2000 });
    await redis.flushdb();
    const hot = new RedisHotState(redis, { status_ttl: config.ttl.status_ttl, stats_ttl: config.ttl.stats_ttl, retry_data_ttl: config.ttl.retry_data_ttl });
    const ended = redisEndedLookup(redis, config.ttl.status_ttl);
    // Small fetches: batches of one producer send (PER_SEND records) each.
    const kafka = (id: string) => new KafkaLog({ brokers: config.kafka.brokers, clientId: uniq(id), produceTimeoutMs: 5000, maxWaitMs: 20, maxBytesPerPartition: 2048 });
    const logA = kafka('window-a');
    const logB = kafka('window-b');
    const admin = new Kafka({ clientId: uniq('window-offsets'), brokers: config.kafka.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      await logA.admin.ensureTopics(topicSpecs(config));
      const ids = Array.from({ length: N }, (_, i) => uniq(`wh_window_${i}`));
      const client = logA.producer();
      for (let s = 0; s < SENDS; s++)
        await client.send(
          ids.slice(s * PER_SEND, (s + 1) * PER_SEND).map((id, j) => {
            const k = (s * PER_SEND + j) % 4;
            return {
              topic: config.kafka.topics.pending,
              key: `cfg-${k}`,
              value: encodeWebhook(hook(id, { config_id: `cfg-${k}`, attempt: 0, endpoint: rx.url(`/w/${k}`), endpoint_hash: String(k).padEnd(32, '0') })),
            };
          }),
        );
      await client.close();
      const head = ids[0]!;
      const inner = logA.producer();
      // The head batch's outcome never lands; every other produce does.
      const stuckHead: LogProducer = {
        send: (records) => (records.some((r) => r.value?.includes(head)) ? Promise.reject(new Error('produce failed')) : inner.send(records)),
        close: () => inner.close(),
      };
      const before = rx.received.length;
      const hits = () => {
        const m = new Map<string, number>();
        for (const r of rx.received.slice(before)) m.set(String(r.headers['webhook-id']), (m.get(String(r.headers['webhook-id'])) ?? 0) + 1);
        return m;
      };
      const sender = createHttpSender({ connectionsPerOrigin: 8, snippetBytes: 1024, allowedNetworks: config.delivery.allowed_networks });
      const deps = { config, hot, sender, clock: systemClock, log: process.env.DEBUG_SM ? createLogger('window', 'info') : silentLogger, ended };
      const a = await startWorker({ ...deps, logStore: logA, producer: stuckHead });
      await waitFor(async () => hits().size === N && (await ended.endedAttempts(ids.slice(PER_SEND))).size === N - PER_SEND, {
        timeoutMs: 40_000,
        what: 'worker A sending every webhook and writing all but the head batch',
      });
      await a.stop();
      const committed = async () => Number((await admin.fetchOffsets({ groupId: config.kafka.consumer_group, topics: [config.kafka.topics.pending] }))[0]!.partitions[0]!.offset);
      // A handled far more than max_unresolved records past its commit: none committed.
      expect(await committed()).toBeLessThanOrEqual(0);
      const b = await startWorker({ ...deps, logStore: logB, producer: logB.producer() });
      try {
        await waitFor(async () => (await committed()) === N && (await ended.endedAttempts(ids)).size === N, { timeoutMs: 40_000, what: 'worker B consuming every record' });
      } finally {
        await b.stop();
      }
      expect([...hits()].filter(([, n]) => n !== 1).length, 'webhooks sent more than once').toBe(0);
      expect(await hot.getStatus(ids[N - 1]!)).toMatchObject({ state: 'delivered', attempts: 1 });
    } finally {
      await admin.disconnect();
      await Promise.all([logA.close(), logB.close()]);
      redis.disconnect();
    }
  }, 120_000);
});
