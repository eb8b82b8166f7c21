import { Kafka, logLevel } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConsumedRecord, LogConsumer } from '../../core/ports/log';
import { KafkaLog } from '../../workers/kafka/log';
import { brokerMinSessionTimeout } from '../../workers/kafka/session-timeout';
import { requireEnv, uniq, waitFor } from '../helpers/env';

// kafka.session_timeout below the brokers' group.min.session.timeout.ms: the broker refuses
// the join (INVALID_SESSION_TIMEOUT) and kafkajs stops the consumer for good, so a worker
// would run without consuming anything. It joins with the brokers' minimum instead.

const brokers = requireEnv('KAFKA_BROKERS').split(',');

describe('consumer session timeout below the brokers minimum', () => {
  const prefix = uniq('session');
  const logs: KafkaLog[] = [];
  const consumers: LogConsumer[] = [];

  afterEach(async () => {
    await Promise.allSettled(consumers.splice(0).map((c) => c.stop()));
    await Promise.allSettled(logs.splice(0).map((l) => l.close()));
    const admin = new Kafka({ clientId: `${prefix}-cleanup`, brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
      if (topics.length) await admin.deleteTopics({ topics }).catch(() => {});
    } finally {
      await admin.disconnect();
    }
  });

  it('still consumes, having joined with the minimum (and says so)', async () => {
    const admin = new Kafka({ clientId: `${prefix}-admin`, brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const min = await brokerMinSessionTimeout(admin).finally(() => admin.disconnect());
    // 900 ms is below the brokers' minimum: Kafka's default 6 s, Howk's broker scripts 1 s.
    expect(min).toBeGreaterThan(900);
    const warnings: Record<string, unknown>[] = [];
    const log = new KafkaLog({
      brokers,
      clientId: prefix,
      produceTimeoutMs: 10_000,
      maxWaitMs: 50,
      maxBytesPerPartition: 1 << 20,
      sessionTimeoutMs: 900,
      log: { debug() {}, info() {}, warn: (msg, f) => warnings.push({ msg, ...f }), error() {} },
    });
    logs.push(log);
    const topic = `${prefix}-t`;
    await log.admin.ensureTopics([{ name: topic, partitions: 1 }]);
    await log.producer().send([{ topic, key: 'k', value: 'v' }]);
    const got: ConsumedRecord[] = [];
    const c = log.consumer({ groupId: `${prefix}-g`, topics: [topic] });
    consumers.push(c);
    await c.run(async (b) => void got.push(...b.records));
    // Before: the join was refused and nothing ever came.
    await waitFor(() => got.length === 1, { what: 'the record', timeoutMs: 20_000 });
    expect(warnings).toContainEqual(expect.objectContaining({ configured_ms: 900, broker_min_ms: min }));
  });
});
