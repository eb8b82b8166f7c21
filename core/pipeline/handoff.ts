import { errorMessage } from '../errors/errors';
import type { HotBatch, HotWriter, RetrySchedule } from '../ports/hot-state';
import type { LogProducer, LogRecord } from '../ports/log';
import type { Logger } from '../ports/logger';
import { createBatcher } from '../domain/batcher';
import { retryUntil } from '../domain/retry-until';
import type { StageRecorder } from '../metrics/stages';
import type { Clock } from '../ports/clock';
import type { Step } from './attempt';
import { durableStages } from './stage-marks';
import type { OutcomeBus } from '../ports/outcome-bus';
import { notifyFirstOutcomes } from './first-outcomes';

// Deliveries that outlive their batch (a slow endpoint must not hold back the partition)
// finish in the background. Before the batch commits, each such webhook is written to
// the retry schedule under a lease (handoff_lease): if this worker dies, the scheduler
// re-enqueues it when the lease runs out (at-least-once). When the delivery finishes,
// its outcome is flushed like a batch's (one produce, one hot-state round trip) and the
// lease is acked (removed only if still ours, so a new schedule of the outcome survives).

export type Leased = { id: string; leaseDueAt: number; leaseWritten: Promise<void> };
/** `steps`: the delivery steps whose outcome this is (their 'durable' stage ends with the flush). */
export type Flushable = { records: LogRecord[]; hot: HotBatch; leases: Leased[]; steps?: readonly Step[] };

/** The items' stats added up (one counts object for the flush, not one per item). */
const sumStats = (items: Flushable[]): HotBatch['stats'] => {
  let out: HotBatch['stats'];
  for (const i of items) {
    const st = i.hot.stats;
    if (!st) continue;
    out ??= { at: st.at, counts: {}, endpoints: [] };
    out.at = st.at;
    const counts = out.counts;
    for (const k in st.counts) {
      const n = k as keyof typeof counts;
      counts[n] = (counts[n] ?? 0) + (st.counts[n] ?? 0);
    }
  }
  return out;
};

export const createHandoff = (d: {
  hot: HotWriter & RetrySchedule;
  producer: LogProducer;
  log: Logger;
  flushMs?: number;
  stages?: StageRecorder;
  clock?: Clock;
  outcomes?: OutcomeBus;
  /** Told once these steps' outcomes are durable. */
  durable?: (steps: readonly Step[]) => void;
}) => {
  let inFlight = 0;

  const flushOnce = async (items: Flushable[]) => {
    await Promise.all(items.flatMap((i) => i.leases.map((l) => l.leaseWritten)));
    const records = items.flatMap((i) => i.records);
    const hot: HotBatch = {
      statuses: items.flatMap((i) => i.hot.statuses ?? []),
      // Never `ended` here: until the outcome is on Kafka, the lease is the webhook's only
      // copy; the ack below removes it once the produce has succeeded.
      retries: items.flatMap((i) => i.hot.retries ?? []),
      stats: sumStats(items),
    };
    // Kafka first, then Redis, then the lease ack. A retry must never be in Redis before its
    // snapshot is on howk.state: a FLUSHALL in between would take it, and a rebuild that read
    // howk.state before the snapshot arrived could not bring it back. An ack that ran before
    // the outcome was durable would leave a window in which a crash loses it.
    await d.producer.send(records);
    await d.hot.apply(hot);
    d.durable?.(items.flatMap((i) => i.steps ?? []));
    notifyFirstOutcomes(
      d.outcomes,
      items.flatMap((i) => i.steps ?? []),
      d.log,
    );
    if (d.stages)
      durableStages(
        d.stages,
        items.flatMap((i) => i.steps ?? []),
        (d.clock ?? Date).now(),
      );
    // With the ack, any other schedule of a webhook that ended goes too (a stale copy, e.g.
    // one a rebuild restored from the lease's snapshot): only now that the outcome is durable.
    const ended = items.flatMap((i) => i.hot.ended ?? []);
    await Promise.all([d.hot.ackRetries(items.flatMap((i) => i.leases.map((l) => ({ id: l.id, leaseDueAt: l.leaseDueAt })))), ended.length ? d.hot.apply({ ended }) : undefined]);
  };

  // One flush out at a time; what finishes meanwhile leaves with the next.
  const flushes = createBatcher<Flushable, void>({
    start: { lingerMs: d.flushMs ?? 20 },
    run: async (items) => {
      // The leases still cover these webhooks; keep trying while the process lives.
      await retryUntil(() => flushOnce(items), {
        baseMs: 100,
        capMs: 5000,
        onRetry: (e) => d.log.warn('background outcome flush failed; retrying', { error: errorMessage(e), webhooks: items.length }),
      });
      inFlight -= items.reduce((n, i) => n + i.leases.length, 0);
    },
  });

  return {
    /** How many handed-off deliveries have not been flushed yet. */
    size: () => inFlight,
    taken: (n: number) => void (inFlight += n),
    add(item: Flushable) {
      flushes.add(item).catch(() => {}); // never rejects: retried until written
    },
    async drain() {
      flushes.flush();
      await flushes.idle();
    },
  };
};

export type Handoff = ReturnType<typeof createHandoff>;
