import { retryUntil } from '../domain/retry-until';
import { errorMessage } from '../errors/errors';
import type { Logger } from '../ports/logger';
import type { Log, LogConsumer, LogProducer } from '../ports/log';

// An in-memory replica of compacted topics (API keys, per-config secrets). Every instance
// reads them whole from the beginning under a consumer group of its own, then follows
// them. "Caught up" needs no offsets API: the replica writes a marker (a tombstone with a
// unique key) to each topic and is synced once it has read all of its markers back, which
// proves it has applied everything written before it started.

export const SYNC_PREFIX = '__sync__:';

export type Replica = {
  /** Resolves once every record written before start has been applied. */
  ready: Promise<void>;
  synced(): boolean;
  /** ms timestamp (clock of this process) of the last record applied; for propagation checks. */
  lastAppliedAt(): number;
  stop(): Promise<void>;
};

export type ReplicaOptions = {
  logStore: Log;
  producer: LogProducer;
  topics: string[];
  /** A unique group per instance (it must read everything, not share partitions). */
  groupId: string;
  apply: (topic: string, key: string, value: string | null) => void;
  log: Logger;
  /** Wait between start attempts while the log is unreachable. */
  retryMs?: number;
};

/**
 * A replica's topics are written rarely, and a record ends a waiting fetch at once, so a
 * long idle wait delays nothing: it only spares empty fetches (each api and worker process
 * runs three replicas: keys and secrets, scripts, the Svix API's model). kafkajs heartbeats
 * between fetches, so the wait also paces the heartbeats: at 1 s a replica sends 2 requests a
 * second instead of 4 at 500 ms (at 100 webhooks/s the six replicas of an api and a worker
 * were 0.24 requests per webhook), and the heartbeat still comes well within
 * kafka.session_timeout (3 s; a replica's group has no other member to wait for anyway).
 */
export const REPLICA_IDLE_WAIT_MS = 1000;

export const startReplica = (o: ReplicaOptions): Replica => {
  const nonce = `${SYNC_PREFIX}${o.groupId}:${Date.now().toString(36)}`;
  const pending = new Set(o.topics);
  let synced = false;
  let lastAt = 0;
  let consumer: LogConsumer | undefined;
  let markReady: () => void = () => {};
  const ready = new Promise<void>((r) => (markReady = r));

  const handler = async (b: { topic: string; records: { key: string | null; value: string | null }[] }) => {
    for (const r of b.records) {
      if (r.key === null) continue;
      if (r.key.startsWith(SYNC_PREFIX)) {
        if (r.key === nonce && pending.delete(b.topic) && pending.size === 0 && !synced) {
          synced = true;
          markReady();
        }
        continue;
      }
      try {
        o.apply(b.topic, r.key, r.value);
      } catch (e) {
        o.log.error('replica record not applied', { topic: b.topic, key: r.key, error: errorMessage(e) });
      }
      lastAt = Date.now();
    }
  };

  const stopping = new AbortController();
  const start = async (): Promise<void> => {
    try {
      consumer = o.logStore.consumer({ groupId: o.groupId, topics: o.topics, fromBeginning: true, idleWaitMs: REPLICA_IDLE_WAIT_MS });
      await consumer.run(handler);
      await o.producer.send(o.topics.map((topic) => ({ topic, key: nonce, value: null })));
    } catch (e) {
      await consumer?.stop().catch(() => {});
      consumer = undefined;
      throw e;
    }
  };
  // A fixed wait (base = cap), spread so that instances started together do not retry in step.
  const retryMs = o.retryMs ?? 2000;
  const loop = retryUntil(start, {
    baseMs: retryMs,
    capMs: retryMs,
    jitter: 0.2,
    signal: stopping.signal,
    onRetry: (e, _wait, attempt) => o.log.warn('replica cannot start yet; retrying', { topics: o.topics, error: errorMessage(e), attempt }),
  }).catch(() => {});

  return {
    ready,
    synced: () => synced,
    lastAppliedAt: () => lastAt,
    stop: async () => {
      stopping.abort();
      await loop;
      await consumer?.stop();
    },
  };
};
