// The Kafka-shaped log. Kafka (workers/kafka) and the in-memory log (core/memory) both
// implement these; contract tests hold them to the same behaviour.

export type LogRecord = {
  topic: string;
  key: string | null;
  /** null is a tombstone on compacted topics. */
  value: string | null;
  headers?: Record<string, string>;
};

export type ConsumedRecord = {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: string | null;
  timestamp: number;
};

/** Records of one partition, in offset order. */
export type ConsumedBatch = { topic: string; partition: number; records: ConsumedRecord[] };

export type LogProducer = {
  /** Resolves once every record is acknowledged by the log (acks=all); rejects with UnavailableError otherwise. */
  send(records: LogRecord[]): Promise<void>;
  close(): Promise<void>;
};

export type ConsumerOptions = {
  groupId: string;
  topics: string[];
  fromBeginning?: boolean;
  /** Told once a batch's offsets are committed: its record count and the ms since its handler resolved. */
  onCommitted?: (records: number, ms: number) => void;
};

/**
 * The handler sees one partition's batch at a time; the offsets of a batch are committed
 * only after the handler resolves. A handler that throws gets the batch again.
 */
export type BatchHandler = (batch: ConsumedBatch) => Promise<void>;

export type LogConsumer = {
  run(handler: BatchHandler): Promise<void>;
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
};

export type TopicSpec = { name: string; partitions: number; replicationFactor?: number; compacted?: boolean; retentionMs?: number };

export type LogAdmin = {
  ensureTopics(specs: TopicSpec[]): Promise<void>;
  ping(): Promise<void>;
};

export type Log = {
  producer(): LogProducer;
  consumer(opts: ConsumerOptions): LogConsumer;
  admin: LogAdmin;
  close(): Promise<void>;
};
