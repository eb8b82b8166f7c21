import { EventEmitter } from 'node:events';
import type { Consumer, ConsumerRunConfig, EachBatchPayload } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import type { ConsumedBatch } from '../../core/ports/log';
import { silentLogger } from '../../core/ports/logger';
import { KafkaConsumer } from '../../workers/kafka/consumer';
import { KAFKAJS_EVENTS, kafkajsConsumerBase } from '../helpers/kafkajs-stand-in';

// A worker whose group coordinator died keeps fetching from the partitions' leaders while its
// heartbeats fail; the group, on its new coordinator, may meanwhile have dropped it and handed
// its partitions to another worker. A kafkajs consumer stand-in: the test hands batches to
// eachBatch as kafkajs' fetcher would and decides whether a heartbeat is answered.

const SESSION_MS = 600; // heartbeats every 200 ms; unsure after 400 ms without one answered

const fakeKafkajs = () => {
  const bus = new EventEmitter();
  const events = KAFKAJS_EVENTS;
  let cfg: ConsumerRunConfig | undefined;
  let coordinatorUp = true;
  const c = {
    ...kafkajsConsumerBase(bus),
    run: async (config: ConsumerRunConfig) => {
      cfg = config;
      bus.emit(events.GROUP_JOIN, { payload: { memberAssignment: { t: [0] } } });
    },
  };
  let offset = 0;
  /** Offers the next record's batch; resolves whether the consumer took it (resolved its offset). */
  const offer = async (): Promise<boolean> => {
    const n = offset;
    let taken = false;
    const message = { offset: String(n), key: null, value: Buffer.from(`r-${n}`), timestamp: '0', headers: {} };
    await cfg!.eachBatch!({
      batch: { topic: 't', partition: 0, messages: [message], lastOffset: () => String(n), highWatermark: String(n + 1) },
      resolveOffset: () => {
        taken = true;
        offset++;
      },
      heartbeat: async () => {
        if (!coordinatorUp) throw Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:19701'), { name: 'KafkaJSConnectionError' });
        bus.emit(events.HEARTBEAT, { payload: { memberId: 'm' } });
      },
      isStale: () => false,
    } as unknown as EachBatchPayload);
    return taken;
  };
  /** An offset commit of this member that went through (kafkajs emits it once the coordinator took it). */
  const committed = () => bus.emit(events.COMMIT_OFFSETS, { payload: { topics: [] } });
  return { c: c as unknown as Consumer, offer, committed, coordinator: (up: boolean) => (coordinatorUp = up) };
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a worker whose heartbeats go unanswered', () => {
  it('takes no batch once it cannot be sure the group still gives it the partition, and takes them again once a heartbeat is answered', async () => {
    const k = fakeKafkajs();
    const got: string[] = [];
    const consumer = new KafkaConsumer(k.c, { groupId: 'g', topics: ['t'] }, 1, silentLogger, undefined, undefined, undefined, () => SESSION_MS);
    await consumer.run(async (b: ConsumedBatch) => void got.push(...b.records.map((r) => r.value ?? '')));
    expect(await k.offer()).toBe(true);

    k.coordinator(false);
    // Shortly after the last answered heartbeat it still owns the partition for sure.
    expect(await k.offer()).toBe(true);
    await sleep(500);
    // Past two thirds of the session: the group may have handed the partition to another member.
    expect(await k.offer()).toBe(false);
    expect(await k.offer()).toBe(false);
    expect(got).toEqual(['r-0', 'r-1']);

    k.coordinator(true);
    expect(await k.offer()).toBe(true);
    expect(got).toEqual(['r-0', 'r-1', 'r-2']);
    await consumer.stop();
  });

  it('takes batches again once one of its offset commits goes through, while its heartbeats still fail', async () => {
    const k = fakeKafkajs();
    const got: string[] = [];
    const consumer = new KafkaConsumer(k.c, { groupId: 'g', topics: ['t'] }, 1, silentLogger, undefined, undefined, undefined, () => SESSION_MS);
    await consumer.run(async (b: ConsumedBatch) => void got.push(...b.records.map((r) => r.value ?? '')));
    k.coordinator(false);
    await sleep(500);
    expect(await k.offer()).toBe(false);
    // The coordinator takes a group member's commit only from a member of the current generation.
    k.committed();
    expect(await k.offer()).toBe(true);
    expect(got).toEqual(['r-0']);
    await consumer.stop();
  });
});
