import type { ReadSummary, TopicReader } from '../../core/ports/recovery';
import type { ConsumedBatch } from '../../core/ports/log';
import type { SqliteLog } from './log';

// TopicReader over the embedded log: how howk-dev rebuilds its in-memory hot state from the
// file at start-up (the same contract as the Kafka reader,
// test/contract/reconcile-reader.contract.ts).

const BATCH = 500;

export class SqliteTopicReader implements TopicReader {
  constructor(private readonly log: SqliteLog) {}

  async readToEnd(topic: string, onBatch: (b: ConsumedBatch) => Promise<void>, _opts?: { idleTimeoutMs: number }): Promise<ReadSummary> {
    const t = this.log.topic(topic);
    // The high-water marks when the read begins: later appends are not part of it.
    const ends = [...t.next];
    let records = 0;
    let partitions = 0;
    for (const [partition, end] of ends.entries()) {
      let from = 0;
      let counted = false;
      while (from < end) {
        const batch = this.log.read(topic, partition, from, end, BATCH);
        if (!batch.length) break;
        if (!counted) partitions++;
        counted = true;
        records += batch.length;
        await onBatch({ topic, partition, records: batch });
        from = Number(batch[batch.length - 1]!.offset) + 1;
      }
    }
    return { records, partitions, idled: [] };
  }

  async close(): Promise<void> {}
}
