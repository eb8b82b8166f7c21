import { PolledConsumer } from '../../core/log/polled-consumer';
import type { BatchHandler, ConsumedRecord, ConsumerOptions } from '../../core/ports/log';

// A consumer group member of the embedded log, pipelined like the memory and Kafka
// consumers (core/ports/log.ts, core/log/batch-tracker.ts): a partition's next batch starts
// while earlier ones run, and offsets are committed to the file in offset order once every
// batch up to them has resolved. Partitions are shared among the group's members in this
// process (partition i goes to member i mod n). A restarted process resumes after the last
// committed offset and gets every later record again (at-least-once).

const MAX_BATCH = 500;

export type ConsumerGroup = { id: string; members: SqliteConsumer[] };

/** What a consumer uses of its log (SqliteLog, which makes the consumers and so imports this file). */
export type ConsumerLog = {
  topic(name: string): { partitions: number; next: number[] };
  read(topic: string, partition: number, from: number, to: number, limit: number): ConsumedRecord[];
  committed(groupId: string, topic: string, partition: number): number | undefined;
  commit(groupId: string, topic: string, partition: number, next: number): void;
  waitForAppend(ms: number, register?: (done: () => void) => void): Promise<void>;
};

export class SqliteConsumer extends PolledConsumer {
  constructor(
    private readonly log: ConsumerLog,
    private readonly group: ConsumerGroup,
    opts: ConsumerOptions,
  ) {
    super(group.members, opts);
  }

  protected commitTo(topic: string, partition: number, offset: bigint): boolean {
    try {
      this.log.commit(this.group.id, topic, partition, Number(offset));
      return true;
    } catch {
      // Closed or failing file: not committed, so delivered again (at-least-once).
      return false;
    }
  }

  protected nap(ms: number): Promise<void> {
    return this.log.waitForAppend(ms, (done) => (this.wake = done));
  }

  /** Where the group stands on a partition; a partition seen for the first time gets its start written down. */
  private committed(topic: string, partition: number, end: number): number {
    const at = this.log.committed(this.group.id, topic, partition);
    if (at !== undefined) return at;
    const start = this.opts.fromBeginning === false ? end : 0;
    // Recorded at once: retention never deletes what a known group has not consumed.
    this.log.commit(this.group.id, topic, partition, start);
    return start;
  }

  /** Takes every batch available now, in partition then offset order, while there is room. */
  protected takeAll(handler: BatchHandler): boolean {
    let took = false;
    const now = Date.now();
    for (const topic of this.opts.topics) {
      const t = this.log.topic(topic);
      for (let partition = 0; partition < t.partitions; partition++) {
        if (!this.tracker.hasRoom()) return took;
        if (!this.assigned(partition) || this.resting(topic, partition, now)) continue;
        const end = t.next[partition]!;
        const tracked = this.tracker.position(topic, partition);
        const from = tracked ?? BigInt(this.committed(topic, partition, end));
        if (Number(from) >= end) continue;
        const records = this.log.read(topic, partition, Number(from), end, MAX_BATCH);
        if (!records.length) {
          // Compaction or retention removed everything up to the end: nothing to hand over.
          if (tracked === undefined) this.log.commit(this.group.id, topic, partition, end);
          continue;
        }
        took = true;
        const next = BigInt(records[records.length - 1]!.offset) + 1n;
        this.tracker.take(topic, partition, from, next, records.length, (release, maybeSeen) => handler({ topic, partition, records, release, maybeSeen }));
      }
    }
    return took;
  }
}
