import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { UnavailableError, errorMessage } from '../../core/errors/errors';

// The file of the embedded log (docs/RELIABILITY.md, "The embedded mode"). One process owns
// it: the exclusive lock mode makes a second howk-dev on the same folder fail at start-up
// instead of interleaving writes.

export type SqliteOpenOptions = {
  /** A file path, or ':memory:' (tests). */
  path: string;
  /**
   * FULL: every commit (each producer send, each offset commit) is fsynced before it
   * returns, so a 202 survives a power loss, not only a killed process.
   */
  synchronous?: 'FULL' | 'NORMAL';
};

const SCHEMA = `
CREATE TABLE IF NOT EXISTS topics (
  name TEXT PRIMARY KEY,
  partitions INTEGER NOT NULL,
  compacted INTEGER NOT NULL,
  retention_ms INTEGER
);
CREATE TABLE IF NOT EXISTS partitions (
  topic TEXT NOT NULL,
  partition INTEGER NOT NULL,
  next_offset INTEGER NOT NULL,
  PRIMARY KEY (topic, partition)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records (
  topic TEXT NOT NULL,
  partition INTEGER NOT NULL,
  offset INTEGER NOT NULL,
  key TEXT,
  value TEXT,
  ts INTEGER NOT NULL,
  compacted INTEGER NOT NULL,
  PRIMARY KEY (topic, partition, offset)
);
CREATE INDEX IF NOT EXISTS records_latest ON records (topic, partition, key, offset) WHERE compacted = 1;
CREATE TABLE IF NOT EXISTS offsets (
  group_id TEXT NOT NULL,
  topic TEXT NOT NULL,
  partition INTEGER NOT NULL,
  next_offset INTEGER NOT NULL,
  PRIMARY KEY (group_id, topic, partition)
) WITHOUT ROWID;
`;

export const openLogDb = (o: SqliteOpenOptions): Database.Database => {
  if (o.path !== ':memory:') mkdirSync(dirname(o.path), { recursive: true });
  let db: Database.Database;
  try {
    // No waiting on a lock: the only contention is a second process, which is refused.
    db = new Database(o.path, { timeout: 500 });
    // Before the first table: only a new file takes it. Compaction gives free pages back.
    db.pragma('auto_vacuum = INCREMENTAL');
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${o.synchronous ?? 'FULL'}`);
    db.exec(SCHEMA);
  } catch (e) {
    const busy = /locked|busy/i.test(errorMessage(e));
    throw new UnavailableError(busy ? `${o.path} is in use by another process (one howk-dev per data folder)` : `cannot open ${o.path}: ${errorMessage(e)}`);
  }
  return db;
};
