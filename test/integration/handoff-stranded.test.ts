import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { encodeWebhook, type Webhook } from '../../core/records/webhook';
import { createDeliverer } from '../../core/pipeline/deliver';
import { createSchedulerTick } from '../../core/pipeline/scheduler';
import { systemClock } from '../../core/ports/clock';
import type { ConsumedBatch } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import type { DeliveryResponse, Sender } from '../../core/ports/sender';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { KafkaLog } from '../../workers/kafka/log';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { hook } from '../helpers/reconcile-fixtures';
import { useRedisDb } from '../helpers/redis-db';

// Handed-off deliveries of a worker that dies or stops: the scheduler (a real tick, real Kafka
// and Redis) must re-enqueue them within seconds, not after a 30 s lease. The shipped lease
// (delivery.handoff_lease) is used, not one set for the test.

const redisDb = useRedisDb();
const brokers = requireEnv('KAFKA_BROKERS').split(',');
const prefix = uniq('hs');
const config = loadConfig({
  env: {},
  overrides: {
    'delivery.straggler_after': 200,
    'delivery.batch_time_limit': 200,
    ...Object.fromEntries(['pending', 'slow', 'results', 'deadletter', 'state'].map((t) => [`kafka.topics.${t}`, `${prefix}-${t}`])),
  },
});
const TTLS = { status_ttl: 600_000, stats_ttl: 600_000, retry_data_ttl: 600_000 };
const topics = () => Object.values(config.kafka.topics).filter((t) => t.startsWith(prefix));

/** An endpoint that never answers (the slow delivery), and counts what it was sent. */
const stuckSender = () => {
  const sent: string[] = [];
  const sender: Sender = {
    send: (req): Promise<DeliveryResponse> => {
      sent.push(req.headers['webhook-id']!);
      return new Promise(() => {});
    },
    close: async () => {},
  };
  return { sender, sent };
};

describe('handed-off deliveries of a worker that goes away', () => {
  let log: KafkaLog;
  let hot: RedisHotState;
  beforeAll(async () => {
    log = new KafkaLog({ brokers, clientId: prefix, produceTimeoutMs: 10_000, maxWaitMs: 50, maxBytesPerPartition: 1 << 20 });
    await log.admin.ensureTopics(topics().map((name) => ({ name, partitions: 1 })));
    hot = new RedisHotState(createRedis(requireEnv('REDIS_URL'), { db: redisDb() }), TTLS);
  });
  afterAll(async () => {
    await hot?.close();
    await log?.close();
    const admin = new Kafka({ clientId: `${prefix}-cleanup`, brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.deleteTopics({ topics: topics() }).catch(() => {});
    await admin.disconnect();
  });

  const batch = (hooks: Webhook[]): ConsumedBatch => ({
    topic: config.kafka.topics.pending,
    partition: 0,
    records: hooks.map((h, i) => ({ topic: config.kafka.topics.pending, partition: 0, offset: String(i), key: h.config_id, value: encodeWebhook(h), timestamp: Date.now() })),
  });
  const webhook = (id: string) => hook(id, { config_id: `cfg_${id}`, endpoint: 'https://s.example.com/hook', endpoint_hash: 'ef'.repeat(16), attempt: 0 });
  /** Scheduler passes (a real tick) until `id` is on the pending topic again; the ms it took. */
  const reEnqueued = async (id: string, from: number, timeoutMs: number): Promise<number> => {
    const producer = log.producer();
    const produced: string[] = [];
    const tick = createSchedulerTick({
      config,
      hot,
      producer: { ...producer, send: (records) => (produced.push(...records.map((r) => r.value ?? '')), producer.send(records)) },
      clock: systemClock,
      log: silentLogger,
    });
    await waitFor(
      async () => {
        await tick();
        return produced.some((v) => v.includes(id));
      },
      { timeoutMs, intervalMs: 100, what: `${id} re-enqueued` },
    );
    return Date.now() - from;
  };

  it('a worker that dies: its handed-off delivery is re-enqueued within a few seconds', async () => {
    const w = webhook('wh_dies');
    const { sender, sent } = stuckSender();
    // The worker "dies" once its delivery is handed off: nothing it sends reaches Redis any more.
    let dead = false;
    const mortal = new Proxy(hot, { get: (t, p, r) => (dead && typeof Reflect.get(t, p, r) === 'function' ? () => new Promise(() => {}) : Reflect.get(t, p, r)) });
    const deliver = createDeliverer({ config, hot: mortal, producer: log.producer(), clock: systemClock, log: silentLogger, sender });
    await deliver(batch([w]));
    expect(sent).toEqual([w.id]);
    dead = true;
    const took = await reEnqueued(w.id, Date.now(), 40_000);
    // Before: the 30 s lease.
    expect(took).toBeLessThan(8_000);
  }, 60_000);

  it('a worker that stops gracefully: deliveries it gives up are re-enqueued at once', async () => {
    const slow = webhook('wh_slow');
    const queued = { ...webhook('wh_queued'), config_id: slow.config_id };
    const { sender, sent } = stuckSender();
    const deliver = createDeliverer({ config, hot, producer: log.producer(), clock: systemClock, log: silentLogger, sender });
    // Both handed off: the slow one in flight, the other waiting for its turn in the lane.
    await deliver(batch([slow, queued]));
    expect(sent).toEqual([slow.id]);
    const stopped = Date.now();
    void deliver.drain(); // waits for the delivery in flight, which never ends
    const took = await reEnqueued(queued.id, stopped, 40_000);
    // Before: the lease (30 s) ran out first.
    expect(took).toBeLessThan(2_000);
    expect(sent).toEqual([slow.id]);
  }, 60_000);
});
