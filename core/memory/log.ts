import { PolledConsumer } from '../log/polled-consumer';
import type { BatchHandler, ConsumedRecord, ConsumerOptions, Log, LogConsumer, LogProducer, LogRecord, PartitionLag, TopicSpec } from '../ports/log';

// The embedded log of howk-dev: partitioned, keyed, with consumer groups and committed
// offsets, so that the worker code paths are the same as on Kafka. Not durable.

const DEFAULT_PARTITIONS = 4;
const MAX_BATCH = 500;

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
    // Nothing is ever deleted here: a group that never committed is behind by the whole partition.
    lag: async (groupId: string, topics: string[]): Promise<PartitionLag[]> =>
      topics.flatMap((topic) =>
        this.topic(topic).map((records, partition) => ({
          topic,
          partition,
          lag: Math.max(0, records.length - (this.groups.get(groupId)?.offsets.get(`${topic}:${partition}`) ?? 0)),
        })),
      ),
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
      log.push({ topic: r.topic, partition: p, offset: String(log.length), key: r.key, value: r.value, timestamp: now, ...(r.headers ? { headers: r.headers } : {}) });
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

class MemoryConsumer extends PolledConsumer {
  constructor(
    private readonly log: MemoryLog,
    private readonly group: Group,
    opts: ConsumerOptions,
  ) {
    super(group.members, opts);
  }

  protected commitTo(topic: string, partition: number, offset: bigint): boolean {
    this.group.offsets.set(`${topic}:${partition}`, Number(offset));
    return true;
  }

  protected nap(ms: number): Promise<void> {
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
  protected takeAll(handler: BatchHandler): boolean {
    let took = false;
    const now = Date.now();
    for (const topic of this.opts.topics) {
      const parts = this.log.topic(topic);
      for (let partition = 0; partition < parts.length; partition++) {
        if (!this.tracker.hasRoom()) return took;
        if (!this.assigned(partition) || this.resting(topic, partition, now)) continue;
        const id = `${topic}:${partition}`;
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
        this.tracker.take(topic, partition, from, from + BigInt(batch.length), batch.length, (release, maybeSeen, _afterAssignment, lost) =>
          handler({ topic, partition, records: batch, release, maybeSeen, lost }),
        );
      }
    }
    return took;
  }
}
