import { EventEmitter } from 'node:events';
import type { Consumer, ConsumerRunConfig, EachBatchPayload } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import type { ConsumedBatch } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import { KafkaConsumer } from '../../workers/kafka/consumer';
import { KAFKAJS_EVENTS, kafkajsConsumerBase } from '../helpers/kafkajs-stand-in';

// kafkajs 2.2.4 restarts a crashed consumer only after an error it deems retriable. While a
// broker shuts down, "Failed to find group coordinator" is not: kafkajs left the worker's fast
// lane stopped for good (chaos Kafka-down scenario). A kafkajs consumer stand-in: run() hands
// one batch to eachBatch per call; crash() emits kafkajs' CRASH event.

const fakeKafkajs = () => {
  const bus = new EventEmitter();
  const events = KAFKAJS_EVENTS;
  let runs = 0;
  const c = {
    ...kafkajsConsumerBase(bus),
    run: async (cfg: ConsumerRunConfig) => {
      const n = runs++;
      bus.emit(events.GROUP_JOIN, { payload: { memberAssignment: { t: [0] } } });
      const message = { offset: String(n), key: null, value: Buffer.from(`run-${n}`), timestamp: '0', headers: {} };
      await cfg.eachBatch!({
        batch: { topic: 't', partition: 0, messages: [message], lastOffset: () => String(n) },
        resolveOffset: () => {},
        heartbeat: async () => {},
        isStale: () => false,
      } as unknown as EachBatchPayload);
    },
  };
  const crash = (restart: boolean) => bus.emit(events.CRASH, { payload: { error: new Error('Failed to find group coordinator'), groupId: 'g', restart } });
  return { c: c as unknown as Consumer, crash, runs: () => runs };
};

const until = async (what: string, ok: () => boolean) => {
  for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  expect(ok(), what).toBe(true);
};

describe('a kafkajs consumer that crashed and that kafkajs does not restart', () => {
  it('is started again and consumes again', async () => {
    const k = fakeKafkajs();
    const got: string[] = [];
    const consumer = new KafkaConsumer(k.c, { groupId: 'g', topics: ['t'] }, 1, silentLogger);
    await consumer.run(async (b: ConsumedBatch) => void got.push(...b.records.map((r) => r.value ?? '')));
    expect(got).toEqual(['run-0']);
    k.crash(false);
    await until('consumed again after the crash', () => got.includes('run-1'));
    await consumer.stop();
  });

  it('is left to kafkajs when kafkajs restarts it, and not started after a stop', async () => {
    const k = fakeKafkajs();
    const consumer = new KafkaConsumer(k.c, { groupId: 'g', topics: ['t'] }, 1, silentLogger);
    await consumer.run(async () => {});
    k.crash(true);
    await new Promise((r) => setTimeout(r, 500));
    expect(k.runs()).toBe(1);
    await consumer.stop();
    k.crash(false);
    await new Promise((r) => setTimeout(r, 500));
    expect(k.runs()).toBe(1);
  });
});
