import type { BatchHandler, ConsumedRecord, ConsumerOptions, Log, LogConsumer, LogProducer, LogRecord, TopicSpec } from '../ports/log';

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

  waitForAppend(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.waiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  wake(): void {
    for (const w of [...this.waiters]) w();
  }

  async close(): Promise<void> {
    for (const g of this.groups.values()) for (const m of [...g.members]) await m.stop();
  }
}

class MemoryConsumer implements LogConsumer {
  private running = false;
  private paused = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly log: MemoryLog, private readonly group: Group, private readonly opts: ConsumerOptions) {}

  private assigned(topic: string, partition: number): boolean {
    const members = this.group.members;
    return members[partition % members.length] === this;
  }

  async run(handler: BatchHandler): Promise<void> {
    this.running = true;
    this.group.members.push(this);
    this.loop = (async () => {
      while (this.running) {
        const work: Promise<void>[] = [];
        if (!this.paused) {
          for (const topic of this.opts.topics) {
            const parts = this.log.topic(topic);
            parts.forEach((records, partition) => {
              if (!this.assigned(topic, partition)) return;
              const id = `${topic}:${partition}`;
              const from = this.group.offsets.get(id) ?? (this.opts.fromBeginning === false ? records.length : 0);
              if (!this.group.offsets.has(id)) this.group.offsets.set(id, from);
              if (from >= records.length) return;
              const batch = records.slice(from, from + MAX_BATCH);
              work.push(
                handler({ topic, partition, records: batch }).then(
                  () => {
                    this.group.offsets.set(id, from + batch.length);
                    this.opts.onCommitted?.(batch.length, 0);
                  },
                  async () => {
                    // Not committed: the same batch comes again after a short pause.
                    await new Promise((r) => setTimeout(r, 100));
                  },
                ),
              );
            });
          }
        }
        if (work.length) await Promise.all(work);
        else await this.log.waitForAppend(this.paused ? 50 : 200);
      }
    })();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.log.wake();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.log.wake();
    await this.loop;
    const i = this.group.members.indexOf(this);
    if (i >= 0) this.group.members.splice(i, 1);
  }
}
