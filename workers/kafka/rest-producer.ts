import { CompressionTypes, Kafka, Partitioners, logLevel, type Admin, type Message, type PartitionMetadata, type Producer } from 'kafkajs';
import { NotFoundError, UnavailableError, errorMessage } from '../../core/errors/errors';
import { settleWithin } from '../../core/domain/deadline';
import type { KafkaRestAck, KafkaRestRecord } from '../../core/ports/kafka-rest';

// Produce with per-record offsets, as the Upstash Kafka dialect answers. kafkajs reports one
// base offset per partition, so the bridge picks each record's partition itself with
// kafkajs's own DefaultPartitioner (murmur2 of the key, as howk-api's producer does): a
// config_id lands on the same partition whether it came through the edge or howk-api, and
// the records of one partition take consecutive offsets in request order.

export type KafkaRestOptions = { brokers: string[]; clientId: string; produceTimeoutMs: number; metadataTtlMs?: number };

const METADATA_TTL_MS = 30_000;

const deadline = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  settleWithin(
    p,
    ms,
    () => new UnavailableError(`${what} timed out after ${ms} ms`, 2),
    (e) => (e instanceof UnavailableError || e instanceof NotFoundError ? e : new UnavailableError(`${what} failed: ${errorMessage(e)}`, 2)),
  );

export class KafkaRestProducer {
  private readonly kafka: Kafka;
  private readonly producer: Producer;
  private readonly admin: Admin;
  private connected: Promise<void> | undefined;
  private readonly metadata = new Map<string, { at: number; partitions: Promise<PartitionMetadata[]> }>();
  private readonly partitioner = Partitioners.DefaultPartitioner();

  constructor(private readonly o: KafkaRestOptions) {
    this.kafka = new Kafka({
      clientId: o.clientId,
      brokers: o.brokers,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 1000,
      requestTimeout: 5000,
      retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 500 },
    });
    this.producer = this.kafka.producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: false,
      retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 500 },
    });
    this.admin = this.kafka.admin();
  }

  private connect(): Promise<void> {
    return (this.connected ??= Promise.all([this.producer.connect(), this.admin.connect()]).then(
      () => undefined,
      (e) => {
        this.connected = undefined;
        throw e;
      },
    ));
  }

  private partitionsOf(topic: string): Promise<PartitionMetadata[]> {
    const hit = this.metadata.get(topic);
    if (hit && Date.now() - hit.at < (this.o.metadataTtlMs ?? METADATA_TTL_MS)) return hit.partitions;
    const partitions = this.admin.fetchTopicMetadata({ topics: [topic] }).then(
      (m) => {
        const parts = m.topics[0]?.partitions ?? [];
        if (!parts.length) throw new NotFoundError(`topic ${topic}`);
        return parts.sort((a, b) => a.partitionId - b.partitionId);
      },
      (e) => {
        const msg = errorMessage(e);
        throw /does not host this topic-partition|unknown topic/i.test(msg) ? new NotFoundError(`topic ${topic}`) : e;
      },
    );
    this.metadata.set(topic, { at: Date.now(), partitions });
    partitions.catch(() => this.metadata.delete(topic));
    return partitions;
  }

  /** All records in one acks=all produce; resolves with each record's partition and offset, in order. */
  async produce(records: KafkaRestRecord[]): Promise<KafkaRestAck[]> {
    return deadline(this.produceNow(records), this.o.produceTimeoutMs, 'kafka produce');
  }

  private async produceNow(records: KafkaRestRecord[]): Promise<KafkaRestAck[]> {
    await this.connect();
    const topics = [...new Set(records.map((r) => r.topic))];
    const meta = new Map(await Promise.all(topics.map(async (t) => [t, await this.partitionsOf(t)] as const)));
    const now = Date.now();
    const placed = records.map((r) => {
      const partitionMetadata = meta.get(r.topic)!;
      const message: Message & { timestamp: string } = {
        key: r.key ?? null,
        value: r.value,
        timestamp: String(r.timestamp ?? now),
        headers: Object.fromEntries((r.headers ?? []).map((h) => [h.key, h.value])),
      };
      if (r.partition !== undefined && !partitionMetadata.some((p) => p.partitionId === r.partition)) throw new NotFoundError(`partition ${r.partition} of ${r.topic}`);
      const partition = r.partition ?? this.partitioner({ topic: r.topic, partitionMetadata, message });
      return { topic: r.topic, partition, message };
    });
    const byTopic = new Map<string, Message[]>();
    for (const p of placed) {
      let list = byTopic.get(p.topic);
      if (!list) byTopic.set(p.topic, (list = []));
      list.push({ ...p.message, partition: p.partition });
    }
    const acks = await this.producer.sendBatch({
      acks: -1,
      compression: CompressionTypes.None,
      topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
    });
    const next = new Map<string, number>();
    for (const m of acks) next.set(`${m.topicName}:${m.partition}`, Number(m.baseOffset ?? m.offset ?? -1));
    return placed.map((p) => {
      const k = `${p.topic}:${p.partition}`;
      const offset = next.get(k) ?? -1;
      next.set(k, offset + 1);
      return { topic: p.topic, partition: p.partition, offset, timestamp: Number(p.message.timestamp) };
    });
  }

  /** Partition counts of those of `topics` that exist. */
  async topicPartitions(topics: readonly string[]): Promise<Record<string, number>> {
    const run = async () => {
      await this.connect();
      const existing = new Set(await this.admin.listTopics());
      const present = topics.filter((t) => existing.has(t));
      return Object.fromEntries(await Promise.all(present.map(async (t) => [t, (await this.partitionsOf(t)).length] as const)));
    };
    return deadline(run(), this.o.produceTimeoutMs, 'kafka topic metadata');
  }

  async ping(): Promise<void> {
    await deadline(
      this.connect().then(() => this.admin.describeCluster()),
      this.o.produceTimeoutMs,
      'kafka describeCluster',
    );
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.producer.disconnect(), this.admin.disconnect()]);
  }
}
