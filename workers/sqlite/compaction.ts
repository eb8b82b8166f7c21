import type Database from 'better-sqlite3';

// What keeps the embedded log's file from growing forever (docs/RELIABILITY.md, "The
// embedded mode"):
// - delete-policy topics (retentionMs): records older than the retention go, but never one
//   that a consumer group known on the partition has not consumed yet (a howk-dev left off
//   for longer than the retention still delivers what it accepted);
// - compacted topics: only the latest record of each key stays; a tombstone that is the
//   latest of its key goes once it is older than the tombstone retention.
// Each round's work is bounded by what changed since the last one, not by the file's size
// (better-sqlite3 is synchronous: a scan of the whole file would stall the process):
// supersession looks only at the keys appended since the last round (`marks`), and the
// age-based deletions are offset ranges ending at the first record young enough to stay
// (append times grow with offsets). Freed pages go back to the file system (incremental
// vacuum) and the WAL is truncated.

export type CompactionTopic = { name: string; partitions: number; compacted: boolean; retentionMs: number | null; next: number[] };
export type CompactionResult = { deleted: number };
/** Per `topic\0partition`: the offset up to which supersession has been applied. */
export type CompactionMarks = Map<string, number>;

export const compactLog = (db: Database.Database, topics: CompactionTopic[], now: number, tombstoneRetentionMs: number, marks: CompactionMarks): CompactionResult => {
  const superseded = db.prepare(
    `DELETE FROM records WHERE topic = @topic AND partition = @partition AND compacted = 1
       AND key IN (SELECT key FROM records WHERE topic = @topic AND partition = @partition AND offset >= @from AND key IS NOT NULL)
       AND EXISTS (SELECT 1 FROM records AS later
         WHERE later.compacted = 1 AND later.topic = records.topic AND later.partition = records.partition AND later.key = records.key AND later.offset > records.offset)`,
  );
  // The first offset of a partition appended at or after a time (the end when none is).
  const firstSince = db.prepare('SELECT offset FROM records WHERE topic = ? AND partition = ? AND ts >= ? ORDER BY offset LIMIT 1').pluck();
  const oldTombstones = db.prepare('DELETE FROM records WHERE topic = ? AND partition = ? AND offset < ? AND compacted = 1 AND value IS NULL');
  const floor = db.prepare('SELECT MIN(next_offset) FROM offsets WHERE topic = ? AND partition = ?').pluck();
  const expired = db.prepare('DELETE FROM records WHERE topic = ? AND partition = ? AND offset < ?');
  let deleted = 0;
  db.transaction(() => {
    for (const t of topics) {
      for (let p = 0; p < t.partitions; p++) {
        const end = t.next[p] ?? 0;
        if (t.compacted) {
          const id = `${t.name}\u0000${p}`;
          const from = marks.get(id) ?? 0;
          if (from < end) deleted += superseded.run({ topic: t.name, partition: p, from }).changes;
          marks.set(id, end);
          const young = (firstSince.get(t.name, p, now - tombstoneRetentionMs) as number | undefined) ?? end;
          deleted += oldTombstones.run(t.name, p, young).changes;
        } else if (t.retentionMs !== null && t.retentionMs > 0) {
          const young = (firstSince.get(t.name, p, now - t.retentionMs) as number | undefined) ?? end;
          const consumed = (floor.get(t.name, p) as number | null) ?? Number.MAX_SAFE_INTEGER;
          deleted += expired.run(t.name, p, Math.min(young, consumed)).changes;
        }
      }
    }
  })();
  if (deleted > 0) {
    db.pragma('incremental_vacuum');
    db.pragma('wal_checkpoint(TRUNCATE)');
  }
  return { deleted };
};
