import { createRequire } from 'node:module';
import { Kafka, logLevel } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import type { ConsumedRecord, LogConsumer } from '../../core/ports/log';
import { KafkaLog } from '../../workers/kafka/log';
import { requireEnv, uniq, waitFor } from '../helpers/env';

// What an idle Kafka client costs: kafkajs' request queues must not wake the process every
// millisecond when nothing waits (workers/kafka/request-queue.ts), and a consumer's long idle
// wait (ConsumerOptions.idleWaitMs, the replicas') must not delay a record that arrives.

const brokers = requireEnv('KAFKA_BROKERS').split(',');
const RequestQueue = createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js') as {
  prototype: { checkPendingRequests: () => void; push: (r: { entry: { apiName: string } }) => void };
};

const IDLE_WAIT_MS = 6_000;

describe('Kafka client when idle', () => {
  const prefix = uniq('idle');
  let log: KafkaLog;
  const consumers: LogConsumer[] = [];

  beforeEach(() => {
    log = new KafkaLog({ brokers, clientId: prefix, produceTimeoutMs: 10_000, maxWaitMs: 50, maxBytesPerPartition: 1 << 20 });
  });

  afterEach(async () => {
    await Promise.allSettled(consumers.splice(0).map((c) => c.stop()));
    await log.close();
    const admin = new Kafka({ clientId: `${prefix}-cleanup`, brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
      if (topics.length) await admin.deleteTopics({ topics }).catch(() => {});
    } finally {
      await admin.disconnect();
    }
  });

  it('a connected producer with nothing to send does not check its request queue every millisecond', async () => {
    const topic = `${prefix}-p`;
    await log.admin.ensureTopics([{ name: topic, partitions: 1 }]);
    const p = log.producer();
    await p.send([{ topic, key: 'k', value: 'v' }]);
    const proto = RequestQueue.prototype;
    const original = proto.checkPendingRequests;
    let checks = 0;
    proto.checkPendingRequests = function (this: unknown) {
      checks++;
      original.call(this);
    };
    try {
      await new Promise((r) => setTimeout(r, 500));
    } finally {
      proto.checkPendingRequests = original;
    }
    // Before the fix: one check per millisecond per connection (the admin's and the
    // producer's), about 1,000 in these 500 ms; now only responses trigger one (none here).
    expect(checks).toBeLessThan(20);
  });

  it('a consumer with a long idle wait still gets a record as soon as it is produced', async () => {
    const topic = `${prefix}-c`;
    await log.admin.ensureTopics([{ name: topic, partitions: 1 }]);
    const p = log.producer();
    await p.send([{ topic, key: 'k', value: 'first' }]);
    const got: ConsumedRecord[] = [];
    // 6 s: long next to a lane's max_wait (250 ms). Not longer: the first record waits it out once
    // (a new member's partitions start paused, and kafkajs sleeps the idle wait while none fetch).
    const c = log.consumer({ groupId: `${prefix}-g`, topics: [topic], idleWaitMs: IDLE_WAIT_MS });
    consumers.push(c);
    await c.run(async (b) => {
      got.push(...b.records);
    });
    await waitFor(() => got.length >= 1, { what: 'the first record' });
    // The consumer's fetch now waits at the broker for up to the idle wait; a record ends it.
    await new Promise((r) => setTimeout(r, 300));
    const sent = Date.now();
    await p.send([{ topic, key: 'k', value: 'second' }]);
    await waitFor(() => got.length >= 2, { what: 'the second record', timeoutMs: IDLE_WAIT_MS / 2 });
    expect(got.map((r) => r.value)).toEqual(['first', 'second']);
    // Well under the idle wait: the record ended the fetch, the wait did not run out.
    expect(Date.now() - sent).toBeLessThan(IDLE_WAIT_MS / 2);
  });

  it('an idle worker lane at the default kafka.max_wait polls a few times a second', async () => {
    const topic = `${prefix}-lane`;
    await log.admin.ensureTopics([{ name: topic, partitions: 12 }]);
    const lanes = new KafkaLog({
      brokers,
      clientId: `${prefix}-lanes`,
      produceTimeoutMs: 10_000,
      maxWaitMs: loadConfig({ env: {} }).kafka.max_wait,
      maxBytesPerPartition: 1 << 20,
    });
    const c = lanes.consumer({ groupId: `${prefix}-lane-g`, topics: [topic] });
    consumers.push(c);
    const proto = RequestQueue.prototype;
    const original = proto.push;
    let fetches = 0;
    try {
      await c.run(async () => {});
      await new Promise((r) => setTimeout(r, 1000));
      proto.push = function (this: unknown, r) {
        if (r.entry.apiName === 'Fetch') fetches++;
        original.call(this, r);
      };
      await new Promise((r) => setTimeout(r, 2000));
      proto.push = original;
      // At 50 ms, about 40 empty fetches in these 2 s; at 250 ms about 8. (A record still ends
      // a waiting fetch at once: the test above.)
      expect(fetches).toBeLessThanOrEqual(12);
    } finally {
      proto.push = original;
      await c.stop();
      await lanes.close();
    }
  });
});
