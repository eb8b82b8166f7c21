import type { ReadSummary, TopicReader } from '../ports/recovery';
import type { MemoryLog } from './log';

// TopicReader over the embedded log (howk-dev, tests): the same contract as the Kafka
// reader (test/contract/reconcile-reader.contract.ts).

const BATCH = 500;

export class MemoryTopicReader implements TopicReader {
  constructor(private readonly log: MemoryLog) {}

  async readToEnd(topic: string, onBatch: Parameters<TopicReader['readToEnd']>[1], _opts?: { idleTimeoutMs: number }): Promise<ReadSummary> {
    // The high-water marks when the read begins: later appends are not part of it.
    const parts = this.log.topic(topic).map((records) => records.slice());
    let records = 0;
    let partitions = 0;
    for (const [partition, list] of parts.entries()) {
      if (!list.length) continue;
      partitions++;
      for (let i = 0; i < list.length; i += BATCH) {
        const batch = list.slice(i, i + BATCH);
        records += batch.length;
        await onBatch({ topic, partition, records: batch });
      }
    }
    return { records, partitions, idled: [] };
  }

  async close(): Promise<void> {}
}
