import type { Admin } from 'kafkajs';

/** Where a consumer group stands on one partition: `committed` null when it never committed there. */
export type GroupPartitionLag = { topic: string; partition: number; committed: number | null; end: number; lag: number };

/**
 * The committed offset of `groupId` against the log end of every partition of `topics` (the
 * lag gauges and `howk doctor`). A partition the broker gives no end offsets for is left out.
 */
export const groupLag = async (admin: Admin, groupId: string, topics: string[]): Promise<GroupPartitionLag[]> => {
  const committed = await admin.fetchOffsets({ groupId, topics });
  const rows: GroupPartitionLag[] = [];
  for (const t of committed) {
    const ends = await admin.fetchTopicOffsets(t.topic);
    for (const p of t.partitions) {
      const end = ends.find((e) => e.partition === p.partition);
      if (!end) continue;
      const c = Number(p.offset);
      // Never committed: everything still in the partition is ahead of the group.
      const from = c >= 0 ? c : Number(end.low);
      rows.push({ topic: t.topic, partition: p.partition, committed: c >= 0 ? c : null, end: Number(end.high), lag: Math.max(0, Number(end.high) - from) });
    }
  }
  return rows;
};
