import type { Consumer } from 'kafkajs';

/** Batches handled but not yet committed, per partition; more than this (a partition lost in a rebalance) drops the oldest. */
const MAX_WAITING = 100;

/**
 * Times each batch from its handler resolving to the commit that covers it. kafkajs commits
 * after eachBatch returns (autoCommit), so the commit is seen through its COMMIT_OFFSETS event.
 */
export const commitTimer = (c: Consumer, onCommitted: ((records: number, ms: number) => void) | undefined) => {
  if (!onCommitted) return undefined;
  const waiting = new Map<string, { last: bigint; n: number; at: number }[]>();
  c.on(c.events.COMMIT_OFFSETS, (e) => {
    const now = Date.now();
    for (const t of e.payload.topics) {
      for (const p of t.partitions) {
        const key = `${t.topic}:${p.partition}`;
        const list = waiting.get(key);
        if (!list) continue;
        // The committed offset is the next one to read: it covers every batch before it.
        const next = BigInt(p.offset);
        while (list.length && list[0]!.last < next) {
          const h = list.shift()!;
          onCommitted(h.n, now - h.at);
        }
        if (!list.length) waiting.delete(key);
      }
    }
  });
  return {
    handled(topic: string, partition: number, lastOffset: string, records: number): void {
      const key = `${topic}:${partition}`;
      let list = waiting.get(key);
      if (!list) waiting.set(key, (list = []));
      if (list.length >= MAX_WAITING) list.shift();
      list.push({ last: BigInt(lastOffset), n: records, at: Date.now() });
    },
  };
};
