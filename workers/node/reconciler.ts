import { hostname } from 'node:os';
import type { Config } from '../../core/config/schema';
import { MemoryLog } from '../../core/memory/log';
import { MemoryTopicReader } from '../../core/memory/topic-reader';
import type { GuardRestore } from '../../core/ports/guards';
import type { Logger } from '../../core/ports/logger';
import type { Clock } from '../../core/ports/clock';
import type { DeadLetterStore, RebuildState, RetrySchedule } from '../../core/ports/hot-state';
import type { Log } from '../../core/ports/log';
import type { OrphanRepair, TopicReader } from '../../core/ports/recovery';
import { createOrphanSweep } from '../../core/reconcile/orphans';
import { createReconciler, type EnsureOutcome, type Reconciler } from '../../core/reconcile/reconciler';
import { pausableClaims, runSentinel, type Pausable } from '../../core/reconcile/sentinel';
import { KafkaTopicReader } from '../kafka/topic-reader';
import { SqliteLog } from '../sqlite/log';
import { SqliteTopicReader } from '../sqlite/topic-reader';

// The reconciler as every worker and scheduler embeds it (workers/node/fleet.ts): the
// start-up canary check before any consumer runs, and the runtime sentinel that pauses this
// process's consumers and scheduler while the fleet rebuilds. howk-reconciler
// (workers/reconciler/main.ts) runs the same code on its own.

export type ReconcilerParts = {
  config: Config;
  logStore: Log;
  hot: RebuildState & DeadLetterStore & OrphanRepair;
  log: Logger;
  clock: Clock;
  reader?: TopicReader;
  /** Pauses and circuits are rebuilt only with these. */ guards?: GuardRestore;
  /** Told of each rebuild this process completed (the rebuilds metric). */
  onRebuilt?: () => void;
  /** Runs the orphan sweep with the sentinel (schedulers and howk-reconciler --watch), telling this of its repairs. */
  orphans?: { onRepaired: (n: number) => void };
};

/** A lock token unique to this process. */
export const ownerToken = (role: string): string => `${hostname()}:${process.pid}:${role}:${Math.random().toString(36).slice(2, 10)}`;

/** The embedded logs replay themselves; Kafka gets a reader of its own (connected only when a rebuild runs). */
export const readerFor = (config: Config, logStore: Log): TopicReader =>
  logStore instanceof MemoryLog
    ? new MemoryTopicReader(logStore)
    : logStore instanceof SqliteLog
      ? new SqliteTopicReader(logStore)
      : new KafkaTopicReader({ brokers: config.kafka.brokers, clientId: `${config.kafka.client_id}-reconciler`, groupPrefix: `${config.kafka.consumer_group}-rebuild` });

export type EmbeddedReconciler = {
  reconciler: Reconciler;
  /** The start-up check: returns once the canary is present (this process rebuilt, or waited for the one that did). */
  ready(): Promise<EnsureOutcome>;
  /** Consumers the sentinel pauses during a rebuild. */
  track(consumers: Pausable[]): void;
  /** The scheduler's view of the hot state: it claims nothing while a rebuild runs. */
  gateClaims<H extends RetrySchedule>(hot: H): H;
  /** Starts the sentinel. */
  start(): void;
  stop(): Promise<void>;
};

export const embedReconciler = (p: ReconcilerParts, role: string): EmbeddedReconciler => {
  const reader = p.reader ?? readerFor(p.config, p.logStore);
  const reconciler = createReconciler({ config: p.config, hot: p.hot, reader, log: p.log, clock: p.clock, guards: p.guards, owner: ownerToken(role), onRebuilt: p.onRebuilt });
  const pausables: Pausable[] = [];
  const abort = new AbortController();
  let sentinel: Promise<void> | undefined;
  let sweep: Promise<void> | undefined;
  return {
    reconciler,
    ready: () => reconciler.ensureInitialized(abort.signal),
    track: (consumers) => void pausables.push(...consumers),
    gateClaims: (hot) => {
      const { hot: gated, gate } = pausableClaims(hot);
      pausables.push(gate);
      return gated;
    },
    start: () => {
      sentinel ??= runSentinel({ config: p.config, hot: p.hot, reconciler, log: p.log, pausables: () => pausables }, abort.signal);
      if (p.orphans) sweep ??= createOrphanSweep({ config: p.config, reader, hot: p.hot, log: p.log, clock: p.clock, onRepaired: p.orphans.onRepaired }).run(abort.signal);
    },
    stop: async () => {
      abort.abort();
      await sentinel?.catch(() => {});
      await sweep?.catch(() => {});
      await reader.close();
    },
  };
};
