import { CompressionTypes, Kafka, logLevel, type Admin, type Consumer, type Producer } from 'kafkajs';
import { UnavailableError, errorMessage } from '../../core/errors/errors';
import type { BatchHandler, ConsumerOptions, Log, LogConsumer, LogProducer, LogRecord, TopicSpec } from '../../core/ports/log';

process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';

export type KafkaLogOptions = {
  brokers: string[];
  clientId: string;
  produceTimeoutMs: number;
  maxWaitMs: number;
  maxBytesPerPartition: number;
  sessionTimeoutMs?: number;
  /** Partitions of one consumer handled at once. */
  partitionsConsumedConcurrently?: number;
};

const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new UnavailableError(`${what} timed out after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(e instanceof UnavailableError ? e : new UnavailableError(`${what} failed: ${errorMessage(e)}`));
      },
    );
  });

export class KafkaLog implements Log {
  private readonly kafka: Kafka;
  private readonly producers: Producer[] = [];
  private readonly consumers: KafkaConsumer[] = [];
  private adminClient: Admin | undefined;
  readonly admin;

  constructor(private readonly opts: KafkaLogOptions) {
    this.kafka = new Kafka({
      clientId: opts.clientId,
      brokers: opts.brokers,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 3000,
      requestTimeout: 10_000,
      retry: { retries: 3, initialRetryTime: 200, maxRetryTime: 2000 },
    });
    this.admin = {
      ensureTopics: (specs: TopicSpec[]) => this.ensureTopics(specs),
      ping: () => this.ping(),
    };
  }

  private async getAdmin(): Promise<Admin> {
    if (!this.adminClient) {
      const a = this.kafka.admin();
      await a.connect();
      this.adminClient = a;
    }
    return this.adminClient;
  }

  private async ensureTopics(specs: TopicSpec[]): Promise<void> {
    const admin = await withTimeout(this.getAdmin(), 15_000, 'kafka admin connect');
    const existing = new Set(await admin.listTopics());
    const missing = specs.filter((s) => !existing.has(s.name));
    if (!missing.length) return;
    await admin.createTopics({
      waitForLeaders: true,
      topics: missing.map((s) => ({
        topic: s.name,
        numPartitions: s.partitions,
        replicationFactor: s.replicationFactor ?? 1,
        configEntries: [
          ...(s.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : []),
          ...(s.retentionMs && !s.compacted ? [{ name: 'retention.ms', value: String(s.retentionMs) }] : []),
        ],
      })),
    });
    // A broker can answer "created" before every partition has a leader in its metadata;
    // producing or committing then fails with "does not host this topic-partition".
    const names = missing.map((s) => s.name);
    for (let i = 0; i < 50; i++) {
      try {
        const meta = await admin.fetchTopicMetadata({ topics: names });
        if (meta.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
      } catch {
        // not visible yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async ping(): Promise<void> {
    const admin = await withTimeout(this.getAdmin(), 3000, 'kafka connect');
    await withTimeout(admin.describeCluster(), 3000, 'kafka describeCluster');
  }

  producer(): LogProducer {
    const p = this.kafka.producer({ allowAutoTopicCreation: false, retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 } });
    this.producers.push(p);
    let connected: Promise<void> | undefined;
    const connect = () => (connected ??= p.connect().catch((e) => {
      connected = undefined;
      throw e;
    }));
    return {
      send: async (records: LogRecord[]) => {
        if (!records.length) return;
        const byTopic = new Map<string, { key: string | null; value: string | null; headers?: Record<string, string> }[]>();
        for (const r of records) {
          let list = byTopic.get(r.topic);
          if (!list) byTopic.set(r.topic, (list = []));
          list.push({ key: r.key, value: r.value, headers: r.headers });
        }
        await withTimeout(
          connect().then(() =>
            p.sendBatch({
              acks: -1,
              compression: CompressionTypes.None,
              topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
            }),
          ),
          this.opts.produceTimeoutMs,
          'kafka produce',
        );
      },
      close: () => p.disconnect(),
    };
  }

  consumer(opts: ConsumerOptions): LogConsumer {
    const c = new KafkaConsumer(
      this.kafka.consumer({
        groupId: opts.groupId,
        sessionTimeout: this.opts.sessionTimeoutMs ?? 30_000,
        heartbeatInterval: Math.max(500, Math.floor((this.opts.sessionTimeoutMs ?? 30_000) / 10)),
        rebalanceTimeout: 30_000,
        maxWaitTimeInMs: this.opts.maxWaitMs,
        maxBytesPerPartition: this.opts.maxBytesPerPartition,
        retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 5000 },
      }),
      opts,
      this.opts.partitionsConsumedConcurrently ?? 4,
    );
    this.consumers.push(c);
    return c;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.consumers.map((c) => c.stop()), ...this.producers.map((p) => p.disconnect()), this.adminClient?.disconnect()]);
  }
}

class KafkaConsumer implements LogConsumer {
  private pausedTopics = false;
  private stopped = false;

  constructor(private readonly c: Consumer, private readonly opts: ConsumerOptions, private readonly concurrency: number) {}

  async run(handler: BatchHandler): Promise<void> {
    await this.c.connect();
    await this.c.subscribe({ topics: this.opts.topics, fromBeginning: this.opts.fromBeginning ?? true });
    await this.c.run({
      autoCommit: true,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: this.concurrency,
      eachBatch: async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isStale }) => {
        if (!batch.messages.length || isStale()) return;
        // Long deliveries must not cost the group membership.
        const beat = setInterval(() => void heartbeat().catch(() => {}), 2000);
        try {
          await handler({
            topic: batch.topic,
            partition: batch.partition,
            records: batch.messages.map((m) => ({
              topic: batch.topic,
              partition: batch.partition,
              offset: m.offset,
              key: m.key ? m.key.toString('utf8') : null,
              value: m.value ? m.value.toString('utf8') : null,
              timestamp: Number(m.timestamp),
            })),
          });
        } finally {
          clearInterval(beat);
        }
        // Only now is every outcome of the batch durable: resolve and commit.
        resolveOffset(batch.messages[batch.messages.length - 1]!.offset);
        await commitOffsetsIfNecessary();
      },
    });
  }

  pause(): void {
    this.pausedTopics = true;
    this.c.pause(this.opts.topics.map((topic) => ({ topic })));
  }

  resume(): void {
    if (!this.pausedTopics) return;
    this.pausedTopics = false;
    this.c.resume(this.opts.topics.map((topic) => ({ topic })));
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.c.disconnect().catch(() => {});
  }
}
