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
  /** The record's headers, when it has any (a log without headers leaves this out). */
  headers?: Record<string, string>;
};

/** Records of one partition, in offset order. */
export type ConsumedBatch = {
  topic: string;
  partition: number;
  records: ConsumedRecord[];
  /**
   * The handler says its batch no longer holds the worker (its deliveries are done; only the
   * durable writes of their outcomes remain): under maxBatchesInFlight it stops counting, so
   * the consumer may fetch again. Not called: it counts until the handler settles.
   */
  release?: () => void;
  /**
   * The records may have been handled before by another consumer: those of a partition this
   * consumer was just given (an assignment, a restart) below its high-water mark when first
   * fetched (its last owner may have handled any of them and committed none), or its first
   * maxUnresolved where the log does not tell that mark. The worker then looks up which of
   * them have ended (core/pipeline/known-passes.ts).
   */
  maybeSeen?: boolean;
  /**
   * The batch starts at or past where its partition ended when this consumer was given it: its
   * last owner gave it up before, so (a member dropped from its group that still fetches aside)
   * nobody else had these records. Told only by logs that can read that end (Kafka).
   */
  afterAssignment?: boolean;
  /**
   * True once nothing of this batch can commit here any more: its partition went to another
   * consumer in a rebalance (which starts from the last commit), a rewind, a stop. Its
   * deliveries not yet started are then the next owner's to make (core/pipeline/deliver.ts).
   */
  lost?: () => boolean;
};

export type LogProducer = {
  /** Resolves once every record is acknowledged by the log (acks=all); rejects with UnavailableError otherwise. */
  send(records: LogRecord[]): Promise<void>;
  close(): Promise<void>;
  /**
   * True when the sends of one tick leave in one request and a refused request is sent again
   * per send (KafkaLog's): a caller gathering sends may then hand them over one by one, and
   * only the send the log refused fails. Else one send per gathering is cheaper (a SQLite
   * transaction each).
   */
  readonly mergesTick?: boolean;
};

export type ConsumerOptions = {
  groupId: string;
  topics: string[];
  fromBeginning?: boolean;
  /** Told once a batch's offsets are committed: its record count and the ms since its handler resolved. */
  onCommitted?: (records: number, ms: number) => void;
  /**
   * Most records taken and not yet resolved at once (all partitions of this consumer); past
   * it, the consumer takes no new batch until some resolve. A batch is taken whole, so the
   * bound can be exceeded by one batch.
   */
  maxUnresolved?: number;
  /**
   * Batches in flight (not yet released: ConsumedBatch.release) at which the consumer stops
   * fetching until one is released or settles (the batches of
   * one fetch are all taken, so this can be exceeded within a fetch). Under load the next fetch then
   * waits for one to settle and comes back with more records: fewer, bigger batches, so the
   * per-batch work (admission and completion calls, an outcome produce, a status write, a
   * commit) is shared by more webhooks. Under light load batches settle before the bound is
   * reached and nothing waits. Unset: no bound.
   */
  maxBatchesInFlight?: number;
  /**
   * Longest one hold lasts (default 100 ms): a batch whose deliveries cannot finish (a handoff
   * writing to a log that is away) must not stop the consumer from fetching, or rejoining its
   * group, for long.
   */
  maxHoldMs?: number;
  /** Gather the commits of this long into one request (0: commit as soon as a batch resolves). */
  commitIntervalMs?: number;
  /**
   * Longest a fetch waits at the broker while no record is there (default kafka.max_wait). A
   * record ends the wait at once, so this paces only idle polling: consumers of rarely written
   * topics (the replicas) poll less often and cost the broker and their process less.
   */
  idleWaitMs?: number;
};

/**
 * Handles one partition's batch. Batches are pipelined: the handler for a partition's next
 * batch may start while earlier batches (of the same and other partitions) are still
 * running, but handlers are *started* in offset order per partition, synchronously one
 * after the other, so a handler that registers its work in order at its call keeps that
 * order across overlapping batches.
 *
 * Offsets: offset o of a partition is committed only once every batch up to o has resolved
 * (a later batch that resolves first waits for the earlier ones). A handler that rejects
 * gets its batch again: the partition is consumed again from that batch's first offset, and
 * nothing after it is committed until it has resolved. Later batches of that partition that
 * were already running are not stopped, and are delivered again after the rewind
 * (at-least-once). After a rebalance, batches of a partition this consumer no longer owns
 * commit nothing; the new owner starts from the last commit.
 */
export type BatchHandler = (batch: ConsumedBatch) => Promise<void>;

export type LogConsumer = {
  /** Joins the group and starts consuming; resolves once consumption has started. */
  run(handler: BatchHandler): Promise<void>;
  /** Stops taking new batches (those in flight go on); resume() takes them again. */
  pause(): void;
  resume(): void;
  /**
   * Graceful stop: takes no new batch, waits (bounded) for the batches in flight, commits
   * what resolved, then leaves the group. Batches that resolve later commit nothing.
   */
  stop(): Promise<void>;
};

/**
 * A topic as Howk wants it. `auto` replication is decided against the brokers that answer
 * (core/pipeline/topics.ts resolveReplication); left out, a topic gets one replica and the
 * broker's min.insync.replicas.
 */
export type TopicSpec = {
  name: string;
  partitions: number;
  replicationFactor?: number | 'auto';
  minInsyncReplicas?: number | 'auto';
  compacted?: boolean;
  retentionMs?: number;
};

/** How far a consumer group is behind on one partition: records after its committed offset. */
export type PartitionLag = { topic: string; partition: number; lag: number };

export type LogAdmin = {
  ensureTopics(specs: TopicSpec[]): Promise<void>;
  ping(): Promise<void>;
  /** The group's lag on every partition of `topics` (logs that can tell; metrics read it). */
  lag?(groupId: string, topics: string[]): Promise<PartitionLag[]>;
};

/** `lingerMs`: how long an idle producer waits for more sends before it produces (0: at once). */
export type ProducerOptions = { lingerMs?: number };

export type Log = {
  producer(opts?: ProducerOptions): LogProducer;
  consumer(opts: ConsumerOptions): LogConsumer;
  admin: LogAdmin;
  close(): Promise<void>;
};
