import type { Admin, Kafka } from 'kafkajs';
import { UnavailableError, errorMessage } from '../../core/errors/errors';
import type { ConsumedBatch } from '../../core/ports/log';
import type { ReadSummary, TopicReader } from '../../core/ports/recovery';
import { createKafka, LazyAdmin } from './client';

// Reads a whole topic up to the high-water marks taken when the read begins (the rebuild
// of the hot state replays howk.state and howk.deadletter this way). kafkajs has no
// group-less consumer, so each read joins a throw-away consumer group that never commits
// and is deleted afterwards.
//
// A partition is done once a record at or past its high-water mark - 1 has been seen
// (tombstones count: they are records). Compaction can remove a partition's last records
// with nothing after them; then no batch ever reaches the mark, and the partition is given
// up on once fetches keep succeeding without yielding anything for `idleTimeoutMs`.
// Fetches that fail (broker down) never count as idle: the read waits instead.

export type KafkaTopicReaderOptions = { brokers: string[]; clientId: string; groupPrefix: string };

export class KafkaTopicReader implements TopicReader {
  private readonly kafka: Kafka;
  private readonly admin: LazyAdmin;

  constructor(private readonly opts: KafkaTopicReaderOptions) {
    this.kafka = createKafka(opts, 5);
    this.admin = new LazyAdmin(this.kafka);
  }

  async readToEnd(topic: string, onBatch: (b: ConsumedBatch) => Promise<void>, opts: { idleTimeoutMs: number }): Promise<ReadSummary> {
    let admin: Admin;
    let offsets: { partition: number; high: string; low: string }[];
    try {
      admin = await this.admin.get();
      offsets = await admin.fetchTopicOffsets(topic);
    } catch (e) {
      throw new UnavailableError(`kafka: cannot read the offsets of ${topic}: ${errorMessage(e)}`);
    }
    const targets = new Map<number, bigint>();
    for (const o of offsets) if (BigInt(o.high) > BigInt(o.low)) targets.set(o.partition, BigInt(o.high));
    if (!targets.size) return { records: 0, partitions: 0, idled: [] };

    const groupId = `${this.opts.groupPrefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    const consumer = this.kafka.consumer({
      groupId,
      sessionTimeout: 10_000,
      heartbeatInterval: 1000,
      maxWaitTimeInMs: 250,
      retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 3000 },
    });
    const remaining = new Set(targets.keys());
    let records = 0;
    let idled: number[] = [];
    let joined = false;
    let lastYield = Date.now();
    let lastFetch = 0;
    let finish!: () => void;
    let fail!: (e: Error) => void;
    const done = new Promise<void>((resolve, reject) => {
      finish = resolve;
      fail = reject;
    });
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true;
      lastYield = Date.now();
    });
    consumer.on(consumer.events.FETCH, () => {
      lastFetch = Date.now();
    });
    consumer.on(consumer.events.CRASH, (e) => {
      if (!e.payload.restart) fail(new UnavailableError(`kafka: reading ${topic} failed: ${errorMessage(e.payload.error)}`));
    });
    const watchdog = setInterval(() => {
      const now = Date.now();
      if (joined && now - lastYield > opts.idleTimeoutMs && now - lastFetch < 2000) {
        idled = [...remaining];
        finish();
      }
    }, 250);
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch, heartbeat }) => {
          const high = targets.get(batch.partition);
          if (high === undefined || !remaining.has(batch.partition) || !batch.messages.length) return;
          const recs = batch.messages
            .filter((m) => BigInt(m.offset) < high)
            .map((m) => ({
              topic,
              partition: batch.partition,
              offset: m.offset,
              key: m.key ? m.key.toString('utf8') : null,
              value: m.value ? m.value.toString('utf8') : null,
              timestamp: Number(m.timestamp),
            }));
          try {
            if (recs.length) await onBatch({ topic, partition: batch.partition, records: recs });
          } catch (e) {
            // The caller's failure (e.g. Redis gone mid-rebuild) ends the read at once.
            fail(e instanceof Error ? e : new Error(String(e)));
            return;
          }
          records += recs.length;
          lastYield = Date.now();
          if (BigInt(batch.messages[batch.messages.length - 1]!.offset) + 1n >= high) {
            remaining.delete(batch.partition);
            if (!remaining.size) finish();
          }
          await heartbeat();
        },
      });
      await done;
    } finally {
      clearInterval(watchdog);
      await consumer.disconnect().catch(() => {});
      await this.admin.connected?.deleteGroups([groupId]).catch(() => {});
    }
    return { records, partitions: targets.size, idled };
  }

  async close(): Promise<void> {
    await this.admin.disconnect().catch(() => {});
  }
}
