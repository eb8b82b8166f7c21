import type Database from 'better-sqlite3';
import { UnavailableError, errorMessage } from '../../core/errors/errors';
import type { ConsumedRecord, ConsumerOptions, Log, LogConsumer, LogProducer, LogRecord, PartitionLag, TopicSpec } from '../../core/ports/log';
import { compactLog, type CompactionMarks, type CompactionResult } from './compaction';
import { SqliteConsumer, type ConsumerGroup } from './consumer';
import { openLogDb, type SqliteOpenOptions } from './db';

// The durable embedded log of howk-dev: the Log port (partitioned, keyed, consumer groups
// with committed offsets, compacted topics) in one SQLite file. A send is one transaction,
// committed (and, with synchronous=FULL, fsynced) before its promise resolves, which is the
// embedded counterpart of acks=all. Consumers are in-process group members, like the memory
// log's; their committed offsets are rows of the same file.

const DEFAULT_PARTITIONS = 4;
const COMPACT_EVERY_MS = 60_000;
/** How long a tombstone stays readable after compaction left it the latest of its key (Kafka's delete.retention.ms). */
const TOMBSTONE_RETENTION_MS = 24 * 3_600_000;

export type SqliteLogOptions = SqliteOpenOptions & {
  defaultPartitions?: number;
  /** 0 turns the periodic compaction off (it still runs at open and on compact()). */
  compactEveryMs?: number;
  tombstoneRetentionMs?: number;
  now?: () => number;
};

export type TopicMeta = { name: string; partitions: number; compacted: boolean; retentionMs: number | null; next: number[] };

const hashKey = (key: string): number => {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
};

type Row = { partition: number; offset: number; key: string | null; value: string | null; ts: number };

export class SqliteLog implements Log {
  readonly db: Database.Database;
  private readonly topics = new Map<string, TopicMeta>();
  private readonly groups = new Map<string, ConsumerGroup>();
  private readonly waiters = new Set<() => void>();
  private readonly timer: ReturnType<typeof setInterval> | undefined;
  private rr = 0;
  private readonly marks: CompactionMarks = new Map();
  private readonly offsets = new Map<string, number | undefined>();
  private closed = false;
  private readonly now: () => number;
  private readonly stmt: Record<'insert' | 'upsertTopic' | 'setNext' | 'read' | 'getOffset' | 'setOffset', Database.Statement>;

  readonly admin = {
    ensureTopics: async (specs: TopicSpec[]) => {
      for (const s of specs) this.topic(s.name, s);
    },
    ping: async () => {
      if (this.closed) throw new UnavailableError('the embedded log is closed');
    },
    lag: async (groupId: string, topics: string[]): Promise<PartitionLag[]> =>
      topics.flatMap((topic) => {
        const t = this.topics.get(topic);
        if (!t) return [];
        return t.next.map((next, partition) => {
          // Never committed: what retention and compaction left in the partition is ahead of the group (as on Kafka).
          const from = this.committed(groupId, topic, partition) ?? this.low(topic, partition, next);
          return { topic, partition, lag: Math.max(0, next - from) };
        });
      }),
  };

  private low(topic: string, partition: number, next: number): number {
    const row = this.db.prepare('SELECT MIN(offset) AS low FROM records WHERE topic = ? AND partition = ?').get(topic, partition) as { low: number | null } | undefined;
    return row?.low ?? next;
  }

  constructor(private readonly opts: SqliteLogOptions) {
    this.now = opts.now ?? Date.now;
    this.db = openLogDb(opts);
    this.stmt = {
      insert: this.db.prepare('INSERT INTO records (topic, partition, offset, key, value, ts, compacted) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      upsertTopic: this.db.prepare('INSERT OR IGNORE INTO topics (name, partitions, compacted, retention_ms) VALUES (?, ?, ?, ?)'),
      setNext: this.db.prepare(
        'INSERT INTO partitions (topic, partition, next_offset) VALUES (?, ?, ?) ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset',
      ),
      read: this.db.prepare('SELECT partition, offset, key, value, ts FROM records WHERE topic = ? AND partition = ? AND offset >= ? AND offset < ? ORDER BY offset LIMIT ?'),
      getOffset: this.db.prepare('SELECT next_offset AS n FROM offsets WHERE group_id = ? AND topic = ? AND partition = ?'),
      setOffset: this.db.prepare(
        'INSERT INTO offsets (group_id, topic, partition, next_offset) VALUES (?, ?, ?, ?) ON CONFLICT (group_id, topic, partition) DO UPDATE SET next_offset = excluded.next_offset',
      ),
    };
    const next = this.db.prepare('SELECT topic, partition, next_offset AS n FROM partitions').all() as { topic: string; partition: number; n: number }[];
    for (const t of this.db.prepare('SELECT name, partitions, compacted, retention_ms FROM topics').all() as {
      name: string;
      partitions: number;
      compacted: number;
      retention_ms: number | null;
    }[]) {
      this.topics.set(t.name, {
        name: t.name,
        partitions: t.partitions,
        compacted: t.compacted === 1,
        retentionMs: t.retention_ms,
        next: Array.from({ length: t.partitions }, () => 0),
      });
    }
    for (const p of next) {
      const t = this.topics.get(p.topic);
      if (t && p.partition < t.partitions) t.next[p.partition] = p.n;
    }
    this.compact();
    const every = opts.compactEveryMs ?? COMPACT_EVERY_MS;
    if (every > 0) {
      this.timer = setInterval(() => this.compact(), every);
      this.timer.unref?.();
    }
  }

  /** The topic's metadata, created (with `spec`, else the default partitions) when new; an existing topic is left as it is. */
  topic(name: string, spec?: Partial<TopicSpec>): TopicMeta {
    let t = this.topics.get(name);
    if (!t) {
      const partitions = spec?.partitions ?? this.opts.defaultPartitions ?? DEFAULT_PARTITIONS;
      t = { name, partitions, compacted: spec?.compacted === true, retentionMs: spec?.retentionMs ?? null, next: Array.from({ length: partitions }, () => 0) };
      this.write(() => this.stmt.upsertTopic.run(name, partitions, t!.compacted ? 1 : 0, t!.retentionMs));
      this.topics.set(name, t);
    }
    return t;
  }

  topicNames(): string[] {
    return [...this.topics.keys()];
  }

  private write<T>(fn: () => T): T {
    if (this.closed) throw new UnavailableError('the embedded log is closed');
    try {
      return this.db.transaction(fn)();
    } catch (e) {
      throw new UnavailableError(`embedded log write failed: ${errorMessage(e)}`);
    }
  }

  append(records: LogRecord[]): void {
    if (!records.length) return;
    const ts = this.now();
    const touched = new Set<TopicMeta>();
    const before = new Map<TopicMeta, number[]>();
    // Topics first, outside the transaction, so that a rolled-back send leaves no half-made topic.
    for (const r of records) this.topic(r.topic);
    try {
      this.write(() => {
        for (const r of records) {
          const t = this.topic(r.topic);
          if (!before.has(t)) before.set(t, [...t.next]);
          const p = r.key === null ? this.rr++ % t.partitions : hashKey(r.key) % t.partitions;
          const offset = t.next[p]!;
          this.stmt.insert.run(r.topic, p, offset, r.key, r.value, ts, t.compacted ? 1 : 0);
          t.next[p] = offset + 1;
          touched.add(t);
        }
        for (const t of touched) t.next.forEach((n, p) => n !== before.get(t)![p] && this.stmt.setNext.run(t.name, p, n));
      });
    } catch (e) {
      // Rolled back: the in-memory high-water marks go back with it.
      for (const [t, next] of before) t.next = next;
      throw e;
    }
    for (const w of [...this.waiters]) w();
  }

  /** Records of a partition in [from, to), at most `limit`, in offset order. */
  read(topic: string, partition: number, from: number, to: number, limit: number): ConsumedRecord[] {
    return (this.stmt.read.all(topic, partition, from, to, limit) as Row[]).map((r) => ({
      topic,
      partition: r.partition,
      offset: String(r.offset),
      key: r.key,
      value: r.value,
      timestamp: r.ts,
    }));
  }

  committed(groupId: string, topic: string, partition: number): number | undefined {
    // The file has one writer (this process): its offsets are cached after the first read.
    const id = `${groupId}\u0000${topic}\u0000${partition}`;
    if (!this.offsets.has(id)) this.offsets.set(id, (this.stmt.getOffset.get(groupId, topic, partition) as { n: number } | undefined)?.n);
    return this.offsets.get(id);
  }

  commit(groupId: string, topic: string, partition: number, next: number): void {
    this.write(() => this.stmt.setOffset.run(groupId, topic, partition, next));
    this.offsets.set(`${groupId}\u0000${topic}\u0000${partition}`, next);
  }

  producer(): LogProducer {
    return { send: async (records) => this.append(records), close: async () => {} };
  }

  consumer(opts: ConsumerOptions): LogConsumer {
    let g = this.groups.get(opts.groupId);
    if (!g) {
      g = { id: opts.groupId, members: [] };
      this.groups.set(opts.groupId, g);
    }
    return new SqliteConsumer(this, g, opts);
  }

  /** Resolves at the next append or after `ms`; `register` gets the function that ends the wait early. */
  waitForAppend(ms: number, register?: (done: () => void) => void): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.waiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.waiters.add(done);
      register?.(done);
    });
  }

  wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Retention and compaction (./compaction.ts); runs at open and every compactEveryMs. */
  compact(): CompactionResult {
    if (this.closed) return { deleted: 0 };
    try {
      return compactLog(this.db, [...this.topics.values()], this.now(), this.opts.tombstoneRetentionMs ?? TOMBSTONE_RETENTION_MS, this.marks);
    } catch {
      // A busy or failing disk: the next round tries again; nothing is lost by waiting.
      return { deleted: 0 };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.timer) clearInterval(this.timer);
    for (const g of this.groups.values()) for (const m of [...g.members]) await m.stop();
    this.closed = true;
    this.wake();
    this.db.close();
  }
}
