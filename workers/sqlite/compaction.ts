import type Database from 'better-sqlite3';

// What keeps the embedded log's file from growing forever (docs/RELIABILITY.md, "The
// embedded mode"):
// - delete-policy topics (retentionMs): records older than the retention go, but never one
//   that a consumer group known on the partition has not consumed yet (a howk-dev left off
//   for longer than the retention still delivers what it accepted);
// - compacted topics: only the latest record of each key stays; a tombstone that is the
//   latest of its key goes once it is older than the tombstone retention.
// Freed pages go back to the file system (incremental vacuum) and the WAL is truncated.

export type CompactionTopic = { name: string; partitions: number; compacted: boolean; retentionMs: number | null };
export type CompactionResult = { deleted: number };

export const compactLog = (db: Database.Database, topics: CompactionTopic[], now: number, tombstoneRetentionMs: number): CompactionResult => {
  const superseded = db.prepare(
    `DELETE FROM records WHERE topic = ? AND compacted = 1 AND key IS NOT NULL AND EXISTS (
       SELECT 1 FROM records AS later
       WHERE later.compacted = 1 AND later.topic = records.topic AND later.partition = records.partition AND later.key = records.key AND later.offset > records.offset)`,
  );
  const oldTombstones = db.prepare('DELETE FROM records WHERE topic = ? AND compacted = 1 AND value IS NULL AND ts < ?');
  const floor = db.prepare('SELECT MIN(next_offset) AS n FROM offsets WHERE topic = ? AND partition = ?');
  const expired = db.prepare('DELETE FROM records WHERE topic = ? AND partition = ? AND ts < ? AND offset < ?');
  let deleted = 0;
  db.transaction(() => {
    for (const t of topics) {
      if (t.compacted) {
        deleted += superseded.run(t.name).changes;
        deleted += oldTombstones.run(t.name, now - tombstoneRetentionMs).changes;
      } else if (t.retentionMs !== null && t.retentionMs > 0) {
        for (let p = 0; p < t.partitions; p++) {
          const n = (floor.get(t.name, p) as { n: number | null }).n;
          deleted += expired.run(t.name, p, now - t.retentionMs, n ?? Number.MAX_SAFE_INTEGER).changes;
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
