import type { Kafka, Producer } from 'kafkajs';
import { useFastRecordEncoding } from './produce-encoding';
import { useFastRecordDecoding } from './fetch-decoding';
import { UnavailableError, errorMessage } from '../../core/errors/errors';
import type { ConsumerOptions, Log, LogConsumer, LogProducer, LogRecord, PartitionLag, ProducerOptions, TopicSpec } from '../../core/ports/log';
import { settleWithin } from '../../core/domain/deadline';
import { createBatcher } from '../../core/domain/batcher';
import { createLogger, type Logger } from '../../core/ports/logger';
import { createKafka, LazyAdmin } from './client';
import { replicationProblem, resolveReplication } from '../../core/pipeline/topics';
import { wantedConfigs } from '../../core/pipeline/topic-plan';
import { KafkaConsumer } from './consumer';
import { groupLag } from './group-lag';
import { FastDefaultPartitioner } from './partitioner';
import { ProducerSlot } from './producer-slot';
import { sessionFitter } from './session-timeout';
import { groupMember } from './group-member';
import { LeaderGroups, sendByLeader } from './leader-groups';

export type KafkaLogOptions = {
  brokers: string[];
  clientId: string;
  produceTimeoutMs: number;
  maxWaitMs: number;
  /** Bytes a fetch waits for (up to maxWaitMs); 1 answers at the first record. */
  minBytes?: number;
  maxBytesPerPartition: number;
  sessionTimeoutMs?: number;
  /**
   * How long the group coordinator waits for known members to rejoin. A consumer that kafkajs
   * restarts keeps its member id (workers/kafka/member-id.ts); a member that is really gone (a
   * process restarted during a broker outage) is waited for this long, so the default is short.
   */
  rebalanceTimeoutMs?: number;
  /** Batches of one fetch response kafkajs hands to the consumer at once (matters only while it waits for room). */
  partitionsConsumedConcurrently?: number;
  /**
   * Idempotent produce (kafka.idempotent_producer; off unless given): kafkajs asks the brokers for a
   * producer id and numbers each partition's batches, so a produce it retries after a lost
   * answer or a leader change is written once and in order.
   */
  idempotent?: boolean;
  /** Where the consumers report commits that failed and rewinds. */
  log?: Logger;
  /** Told of each failed operation (produce, commit, consumer_crash): the error counters. */
  onError?: (op: string) => void;
};

useFastRecordEncoding();
useFastRecordDecoding();

const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  settleWithin(
    p,
    ms,
    () => new UnavailableError(`${what} timed out after ${ms} ms`),
    (e) => (e instanceof UnavailableError ? e : new UnavailableError(`${what} failed: ${errorMessage(e)}`)),
  );

/** Most bytes (keys + values, roughly) one merged produce request carries; one send alone may carry more. */
const MAX_MERGED_BYTES = 512 * 1024;
/** kafka.session_timeout's default, for a KafkaLog made without one (tests, tools). */
const DEFAULT_SESSION_TIMEOUT_MS = 3000;

export class KafkaLog implements Log {
  private readonly kafka: Kafka;
  private readonly producers = new Set<Producer>();
  private readonly consumers: KafkaConsumer[] = [];
  private readonly adminClient: LazyAdmin;
  readonly admin;

  constructor(private readonly opts: KafkaLogOptions) {
    this.kafka = createKafka(opts, 3);
    this.adminClient = new LazyAdmin(this.kafka);
    this.admin = {
      ensureTopics: (specs: TopicSpec[]) => this.ensureTopics(specs),
      ping: () => this.ping(),
      lag: (groupId: string, topics: string[]) => this.lag(groupId, topics),
    };
  }

  private async ensureTopics(specs: TopicSpec[]): Promise<void> {
    const admin = await withTimeout(this.adminClient.get(), 15_000, 'kafka admin connect');
    const existing = new Set(await admin.listTopics());
    const missing = specs.filter((s) => !existing.has(s.name));
    if (!missing.length) return;
    // `auto` replication follows the brokers that answer now (core/pipeline/topics.ts).
    const brokers = (await admin.describeCluster()).brokers.length;
    const resolved = missing.map((s) => resolveReplication(s, brokers));
    for (const r of resolved) {
      const problem = replicationProblem(r, brokers);
      if (problem) throw new UnavailableError(`cannot create topic ${r.name}: ${problem}`);
    }
    // kafkajs' own wait for leaders gives up on the first "does not host this topic-partition"
    // a broker can answer right after creating a topic (seen on a busy machine): that answer
    // only means "not visible yet", and the loop below waits for the leaders.
    await admin
      .createTopics({
        waitForLeaders: true,
        topics: resolved.map((s) => ({
          topic: s.name,
          numPartitions: s.partitions,
          replicationFactor: s.replicationFactor,
          configEntries: Object.entries(wantedConfigs(s)).map(([name, value]) => ({ name, value: value! })),
        })),
      })
      .catch((e: unknown) => {
        if ((e as { type?: string }).type !== 'UNKNOWN_TOPIC_OR_PARTITION' && !/does not host this topic-partition/i.test(errorMessage(e))) throw e;
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
    const admin = await withTimeout(this.adminClient.get(), 3000, 'kafka connect');
    await withTimeout(admin.describeCluster(), 3000, 'kafka describeCluster');
  }

  /** `e`, once the error counters are told of it. */
  private counted(e: unknown, op: string): unknown {
    this.opts.onError?.(op);
    return e;
  }

  private async lag(groupId: string, topics: string[]): Promise<PartitionLag[]> {
    const admin = await withTimeout(this.adminClient.get(), 3000, 'kafka admin connect');
    return (await groupLag(admin, groupId, topics)).map(({ topic, partition, lag }) => ({ topic, partition, lag }));
  }

  /** A kafkajs producer: Howk's partitioning, no topic auto-creation, idempotent when asked. */
  private kafkaProducer(): Producer {
    // kafkajs's default partitioning (murmur2 of the key), hashed without its BigInt Long
    // type (workers/kafka/partitioner.ts); named, kafkajs has no default-partitioner warning to print.
    // Idempotence asks acks=all (sent in any case) and one request in flight per connection, so
    // that a retried batch cannot land behind a later one; a LogProducer sends one request at a
    // time anyway (its queue). Retries stay bounded: a caller gets its answer within
    // produce_timeout, and a record the caller sends again is a new write.
    const idempotent = this.opts.idempotent ?? false;
    return this.kafka.producer({
      createPartitioner: FastDefaultPartitioner,
      allowAutoTopicCreation: false,
      idempotent,
      ...(idempotent ? { maxInFlightRequests: 1 } : {}),
      // Retries inside one send are safe once sends are split by leader (workers/kafka/leader-groups.ts).
      retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
    });
  }

  producer(opts: ProducerOptions = {}): LogProducer {
    const slot = new ProducerSlot(() => this.kafkaProducer(), this.opts.idempotent ?? false, this.producers);
    const leaders = new LeaderGroups(() => this.adminClient.get());
    const timeoutMs = this.opts.produceTimeoutMs;
    const sendNow = (records: LogRecord[]): Promise<void> => {
      const byTopic = new Map<string, { key: string | null; value: string | null; headers?: Record<string, string> }[]>();
      for (const r of records) {
        let list = byTopic.get(r.topic);
        if (!list) byTopic.set(r.topic, (list = []));
        list.push({ key: r.key, value: r.value, headers: r.headers });
      }
      let used: Producer | undefined;
      const topicMessages = [...byTopic].map(([topic, messages]) => ({ topic, messages }));
      return withTimeout(
        slot.get().then((p) => {
          used = p;
          return sendByLeader(p, leaders, topicMessages);
        }),
        timeoutMs,
        'kafka produce',
      ).then(
        () => undefined,
        (e: unknown) => {
          slot.failed(used);
          throw e;
        },
      );
    };

    // Sends that arrive while a produce is in flight wait for it, then leave together in one
    // produce request: kafkajs spends ~0.2 ms of CPU per request and ~10 us per record, and a
    // worker's many small per-partition and background sends cost more in requests than in
    // records. An idle producer sends after its linger, or at once (after the current tick, so that the sends of
    // one tick share a request too). Each caller still resolves only once the request that
    // carried its records is acknowledged (acks=all), and rejects when it failed or when
    // produce_timeout passed since its own call (its records are then dropped if not yet sent).
    type Pending = { records: LogRecord[]; bytes: number; dropped: boolean };
    const linger = opts.lingerMs ?? 0;
    // With a linger (the worker's outcome records), the sends of the next few ms share the
    // request too: a pipelined worker resolves many small batches, and a produce request per
    // batch cost the worker and the broker more than the records it carried.
    const batcher = createBatcher<Pending, unknown[]>({
      start: linger > 0 ? { lingerMs: linger } : 'microtask',
      maxWeight: MAX_MERGED_BYTES,
      weight: (p) => p.bytes,
      // Each caller's error, if any (undefined: sent).
      run: async (taken) => {
        try {
          await sendNow(taken.length === 1 ? taken[0]!.records : taken.flatMap((t) => t.records));
          return [];
        } catch (e) {
          // A refused request (a record over the broker's size limit, say) must not fail the
          // callers that only shared it: each one's records are sent again on their own. A
          // timeout or an unreachable broker fails them all.
          if (taken.length === 1 || /timed out|connect/i.test(errorMessage(e))) throw e;
          return Promise.all(
            taken.map((t) =>
              t.dropped
                ? undefined
                : sendNow(t.records).then(
                    () => undefined,
                    (err: unknown) => err ?? new Error('produce failed'),
                  ),
            ),
          );
        }
      },
    });

    return {
      mergesTick: true,
      send: (records: LogRecord[]) => {
        if (!records.length) return Promise.resolve();
        let bytes = 0;
        for (const r of records) bytes += (r.key?.length ?? 0) + (r.value?.length ?? 0) + 64;
        const entry: Pending = { records, bytes, dropped: false };
        const done = batcher.add(entry).then(({ result, index }) => {
          if (result[index] !== undefined) throw result[index];
        });
        return withTimeout(done, timeoutMs, 'kafka produce').catch((e) => {
          // Not sent yet: it never will be. Already out: its produce goes on, unawaited.
          entry.dropped = true;
          batcher.withdraw(entry);
          throw this.counted(e, 'produce');
        });
      },
      close: async () => {
        // Sends already accepted leave before the connection closes.
        await batcher.idle();
        await slot.disconnect();
      },
    };
  }

  /** The session timeout the brokers accept, read once (workers/kafka/session-timeout.ts). */
  private readonly fitSession = sessionFitter(() => this.adminClient.get());

  consumer(opts: ConsumerOptions): LogConsumer {
    const log = this.opts.log ?? createLogger(`${this.opts.clientId}-consumer`, 'warn');
    const make = groupMember(this.kafka, this.opts, opts);
    const wanted = this.opts.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS;
    let session = wanted;
    const refit = async () => {
      session = await this.fitSession(wanted, log);
      return session === wanted ? undefined : make(session);
    };
    const readEnds = async (topic: string) => (await this.adminClient.get()).fetchTopicOffsets(topic);
    const c = new KafkaConsumer(make(wanted), opts, this.opts.partitionsConsumedConcurrently ?? 4, log, this.opts.onError, refit, readEnds, () => session);
    this.consumers.push(c);
    return c;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.consumers.map((c) => c.stop()), ...[...this.producers].map((p) => p.disconnect()), this.adminClient.disconnect()]);
  }
}
