import { settleWithin } from '../domain/deadline';
import { createBatchTracker, DEFAULT_MAX_UNRESOLVED, IN_FLIGHT_STOP_WAIT_MS, type BatchTracker } from '../log/batch-tracker';
import type { BatchHandler, ConsumedRecord, ConsumerOptions, Log, LogConsumer, LogProducer, LogRecord, TopicSpec } from '../ports/log';

// The embedded log of howk-dev: partitioned, keyed, with consumer groups and committed
// offsets, so that the worker code paths are the same as on Kafka. Not durable.

const DEFAULT_PARTITIONS = 4;
const MAX_BATCH = 500;
/** A rejected batch's partition rests this long before it is taken again. */
const REWIND_PAUSE_MS = 100;

const hashKey = (key: string): number => {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
};

type Group = { offsets: Map<string, number>; members: MemoryConsumer[] };

export class MemoryLog implements Log {
  private topics = new Map<string, ConsumedRecord[][]>();
  private groups = new Map<string, Group>();
  private waiters = new Set<() => void>();
  private rr = 0;
  readonly admin = {
    ensureTopics: async (specs: TopicSpec[]) => {
      for (const s of specs) this.topic(s.name, s.partitions);
    },
    ping: async () => {},
  };

  constructor(private readonly defaultPartitions = DEFAULT_PARTITIONS) {}

  topic(name: string, partitions = this.defaultPartitions): ConsumedRecord[][] {
    let t = this.topics.get(name);
    if (!t) {
      t = Array.from({ length: partitions }, () => []);
      this.topics.set(name, t);
    }
    return t;
  }

  append(records: LogRecord[]): void {
    const now = Date.now();
    for (const r of records) {
      const parts = this.topic(r.topic);
      const p = r.key === null ? this.rr++ % parts.length : hashKey(r.key) % parts.length;
      const log = parts[p]!;
      log.push({ topic: r.topic, partition: p, offset: String(log.length), key: r.key, value: r.value, timestamp: now });
    }
    for (const w of [...this.waiters]) w();
  }

  /** Every record of a topic, in partition then offset order (tests, rebuilds). */
  records(topic: string): ConsumedRecord[] {
    return this.topic(topic).flat();
  }

  producer(): LogProducer {
    return { send: async (records) => this.append(records), close: async () => {} };
  }

  consumer(opts: ConsumerOptions): LogConsumer {
    let g = this.groups.get(opts.groupId);
    if (!g) {
      g = { offsets: new Map(), members: [] };
      this.groups.set(opts.groupId, g);
    }
    return new MemoryConsumer(this, g, opts);
  }

  /** Calls `fn` at the next append; returns the unsubscribe. */
  onAppend(fn: () => void): () => void {
    this.waiters.add(fn);
    return () => this.waiters.delete(fn);
  }

  async close(): Promise<void> {
    for (const g of this.groups.values()) for (const m of [...g.members]) await m.stop();
  }
}

class MemoryConsumer implements LogConsumer {
  private running = false;
  private paused = false;
  private stopped: Promise<void> | undefined;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  /** Partitions resting after a rejected batch, until then. */
  private readonly restUntil = new Map<string, number>();
  private readonly tracker: BatchTracker;

  constructor(
    private readonly log: MemoryLog,
    private readonly group: Group,
    private readonly opts: ConsumerOptions,
  ) {
    this.tracker = createBatchTracker(opts.maxUnresolved ?? DEFAULT_MAX_UNRESOLVED, {
      commit: (topic, partition, offset, batches) => {
        if (!this.group.members.includes(this) || !this.assigned(topic, partition)) return;
        this.group.offsets.set(`${topic}:${partition}`, Number(offset));
        const now = Date.now();
        for (const b of batches) this.opts.onCommitted?.(b.count, now - b.resolvedAt);
      },
      rewind: (topic, partition) => {
        // The tracker is now back at the batch's first offset: the loop takes it again after a rest.
        this.restUntil.set(`${topic}:${partition}`, Date.now() + REWIND_PAUSE_MS);
      },
      settled: () => this.wake?.(),
    });
  }

  private assigned(topic: string, partition: number): boolean {
    const members = this.group.members;
    return members[partition % members.length] === this;
  }

  /** Membership changed: partitions lost no longer commit; the new owner starts from the last commit. */
  rebalanced(): void {
    this.tracker.reassign((topic, partition) => this.assigned(topic, partition));
    this.wake?.();
  }

  private nap(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        off();
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const t = setTimeout(done, ms);
      const off = this.log.onAppend(done);
      this.wake = done;
    });
  }

  /** Takes every batch available now, in partition then offset order, while there is room. */
  private takeAll(handler: BatchHandler): boolean {
    let took = false;
    const now = Date.now();
    for (const topic of this.opts.topics) {
      const parts = this.log.topic(topic);
      for (let partition = 0; partition < parts.length; partition++) {
        if (!this.tracker.hasRoom()) return took;
        if (!this.assigned(topic, partition)) continue;
        const id = `${topic}:${partition}`;
        if ((this.restUntil.get(id) ?? 0) > now) continue;
        const records = parts[partition]!;
        let from = this.tracker.position(topic, partition);
        if (from === undefined) {
          const committed = this.group.offsets.get(id) ?? (this.opts.fromBeginning === false ? records.length : 0);
          if (!this.group.offsets.has(id)) this.group.offsets.set(id, committed);
          from = BigInt(committed);
        }
        const at = Number(from);
        if (at >= records.length) continue;
        const batch = records.slice(at, at + MAX_BATCH);
        took = true;
        this.tracker.take(topic, partition, from, from + BigInt(batch.length), batch.length, () => handler({ topic, partition, records: batch }));
      }
    }
    return took;
  }

  async run(handler: BatchHandler): Promise<void> {
    this.running = true;
    this.group.members.push(this);
    for (const m of this.group.members) m.rebalanced();
    this.loop = (async () => {
      while (this.running) {
        // Something taken: look again at once (a partition may have more than one batch).
        if (!this.paused && this.takeAll(handler)) await new Promise((r) => setTimeout(r, 0));
        else await this.nap(this.paused ? 50 : 200);
      }
    })();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.wake?.();
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.running = false;
      this.wake?.();
      await this.loop;
      // Batches in flight may still finish and commit, within bounds.
      await settleWithin(this.tracker.idle(), IN_FLIGHT_STOP_WAIT_MS, () => new Error('in flight')).catch(() => {});
      this.tracker.clear();
      const i = this.group.members.indexOf(this);
      if (i >= 0) this.group.members.splice(i, 1);
      for (const m of this.group.members) m.rebalanced();
    })();
    return this.stopped;
  }
}
