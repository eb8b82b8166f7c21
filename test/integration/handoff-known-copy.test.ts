import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { encodeWebhook } from '../../core/records/webhook';
import { createDeliverer } from '../../core/pipeline/deliver';
import { systemClock } from '../../core/ports/clock';
import type { ConsumedBatch, LogProducer, LogRecord } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import type { DeliveryResponse, Sender } from '../../core/ports/sender';
import { keys } from '../../core/domain/keys';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { KafkaLog } from '../../workers/kafka/log';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { hook } from '../helpers/reconcile-fixtures';
import { useRedisDb } from '../helpers/redis-db';
import { retryKeyOf } from '../helpers/retry-keys';

// A worker can hold two copies of one pass of a webhook at once (a partition fetched again
// from its last commit after a rebalance while its earlier batch still runs). When the later
// batch's stragglers were leased before the earlier copy's outcome, and that outcome (a retry)
// reached Redis before the later lease, the lease replaced the retry, and acking it (the later
// copy is "known": its outcome is the earlier pass's) left the webhook `retrying` with nothing
// scheduled: lost. Real Kafka (the records) and Redis (the schedule).

const redisDb = useRedisDb();
const brokers = requireEnv('KAFKA_BROKERS').split(',');
const prefix = uniq('hk');
const config = loadConfig({
  env: {},
  overrides: {
    'delivery.straggler_after': 200,
    'delivery.batch_time_limit': 200,
    'retry.base_delay': 60_000,
    'retry.jitter': 0,
    ...Object.fromEntries(['pending', 'slow', 'results', 'deadletter', 'state'].map((t) => [`kafka.topics.${t}`, `${prefix}-${t}`])),
  },
});
const TTLS = { status_ttl: 600_000, stats_ttl: 600_000, retry_data_ttl: 600_000 };

describe('a leased copy of a pass this worker makes in an earlier batch', () => {
  let log: KafkaLog;
  let hot: RedisHotState;
  let redis: ReturnType<typeof createRedis>;
  beforeAll(async () => {
    log = new KafkaLog({ brokers, clientId: prefix, produceTimeoutMs: 10_000, maxWaitMs: 50, maxBytesPerPartition: 1 << 20 });
    await log.admin.ensureTopics(
      Object.values(config.kafka.topics)
        .filter((t) => t.startsWith(prefix))
        .map((name) => ({ name, partitions: 1 })),
    );
    redis = createRedis(requireEnv('REDIS_URL'), { db: redisDb() });
    hot = new RedisHotState(createRedis(requireEnv('REDIS_URL'), { db: redisDb() }), TTLS);
  });
  afterAll(async () => {
    await hot?.close();
    await redis?.quit();
    await log?.close();
    const admin = new Kafka({ clientId: `${prefix}-cleanup`, brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: Object.values(config.kafka.topics).filter((t) => t.startsWith(prefix)) }).catch(() => {});
    await admin.disconnect();
  });

  it('keeps the retry the earlier copy scheduled', async () => {
    const w = hook('wh_known_copy', { config_id: 'cfg_k', endpoint: 'https://k.example.com/hook', endpoint_hash: 'cd'.repeat(16), attempt: 0, max_attempts: 5 });
    // x: another webhook of the config, after w in the first batch, that keeps the lane busy.
    const x = hook('wh_known_next', { ...w, id: 'wh_known_next' });
    // w's endpoint answers 503 (a retry) and x's 200, each once the test lets it.
    let answer!: () => void;
    const answered = new Promise<void>((r) => (answer = r));
    let answerX!: () => void;
    const answeredX = new Promise<void>((r) => (answerX = r));
    let requests = 0;
    const sender: Sender = {
      send: async (req): Promise<DeliveryResponse> => {
        if (req.headers['webhook-id'] === x.id) {
          await answeredX;
          return { kind: 'response', status: 200, retryAfter: null, bodySnippet: 'ok', durationMs: 1 };
        }
        requests++;
        await answered;
        return { kind: 'response', status: 503, retryAfter: null, bodySnippet: 'no', durationMs: 1 };
      },
      close: async () => {},
    };
    // The second lease's snapshot is held until the earlier copy's retry is in Redis (the order
    // that lost the webhook). Other sends go through.
    const real = log.producer();
    let leaseSnapshots = 0;
    let letLease!: () => void;
    const leaseLet = new Promise<void>((r) => (letLease = r));
    const producer: LogProducer = {
      ...real,
      send: async (records: LogRecord[]) => {
        console.log(
          'send',
          records.map((r) => r.topic),
        );
        if (records.length && records.every((r) => r.topic === config.kafka.topics.state) && ++leaseSnapshots === 2) await leaseLet;
        return real.send(records);
      },
    };
    const deliver = createDeliverer({ config, hot, producer, clock: systemClock, log: silentLogger, sender });
    const batch = (hooks: (typeof w)[], maybeSeen: boolean): ConsumedBatch => ({
      topic: config.kafka.topics.pending,
      partition: 0,
      records: hooks.map((h, i) => ({ topic: config.kafka.topics.pending, partition: 0, offset: String(i), key: h.config_id, value: encodeWebhook(h), timestamp: Date.now() })),
      maybeSeen,
    });
    const scoreOf = () => redis.zscore(retryKeyOf(w.id), w.id);

    const first = deliver(batch([w, x], false));
    // The first copy is handed off: its lease is in Redis.
    await waitFor(async () => (await scoreOf()) !== null, { timeoutMs: 10_000, what: 'the first lease' });
    await first;
    // The partition is fetched again from its last commit: the same record, in a second batch.
    const second = deliver(batch([w], true));
    await new Promise((r) => setTimeout(r, 800)); // past straggler_after: the second batch hands off too
    answer();
    // The earlier copy's outcome: a retry a minute out, in Redis (not a renewal of its lease, due
    // a lease from now: the keeper renews every second).
    await waitFor(async () => Number(await scoreOf()) > Date.now() + 30_000, { timeoutMs: 10_000, what: 'the retry of the first copy' });
    const retryDue = Number(await scoreOf());
    expect(retryDue).toBeGreaterThan(Date.now() + 30_000);
    letLease();
    await new Promise((r) => setTimeout(r, 300)); // the second lease is written
    answerX(); // the first batch's lane ends: the second batch's copy of w comes up, known
    await second;
    await new Promise((r) => setTimeout(r, 1000)); // the background flushes and acks
    expect(requests).toBe(1);
    expect((await hot.getStatus(w.id))?.state).toBe('retrying');
    // Before the fix: null (the second lease replaced the retry, and its ack removed it).
    expect(await scoreOf()).not.toBeNull();
    expect(await redis.get(keys.retryData(w.id))).not.toBeNull();
  }, 30_000);
});
