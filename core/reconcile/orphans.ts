import type { Config } from '../config/schema';
import { errorMessage } from '../errors/errors';
import { sleep as defaultSleep } from '../domain/time';
import type { Clock } from '../ports/clock';
import type { RebuildState } from '../ports/hot-state';
import type { Logger } from '../ports/logger';
import type { OrphanRepair, RestoreItem, TopicReader } from '../ports/recovery';
import { compareStamps, type Snapshot } from '../records/state';
import { createStateFold, restoreItemOf } from './replay';

// The safety net for orphaned retries (docs/RELIABILITY.md, "A safety net for orphaned
// retries"). A race that drops a webhook's schedule entry leaves it `retrying` with nothing
// that would ever attempt it again. Every reconciler.orphan_sweep_interval the sweep folds
// howk.state again (the rebuild's rules, core/reconcile/replay.ts) and, for each webhook
// still due (retrying or pending, parked by a circuit or rate limit, not held by a pause) whose due time and last snapshot are
// older than the grace, asks the hot state whether anything still carries it: a schedule
// entry (a scheduler's or a handoff's lease is one), an in-flight record. One that has none,
// and whose stored status is not newer than the snapshot, is scheduled again with
// restoreRetry's never-replace rule: at worst a duplicate, never a second schedule.

/** States of a webhook that is waiting for an attempt (a held one waits for its pause). */
const WAITING = new Set(['retrying', 'pending']);

/**
 * The grace actually used: the configured one, raised to the longest a live delivery can go
 * without leaving a schedule entry or an in-flight record in the hot state: a scheduler's
 * claim stays leased for scheduler.lease, a handed-off delivery for delivery.handoff_lease
 * (renewed), a counted delivery keeps its in-flight record for concurrency.inflight_ttl
 * (renewed); an attempt itself lasts at most delivery.timeout; and a due retry waits up to
 * scheduler.poll_interval to be claimed.
 */
export const orphanGrace = (config: Config): number => {
  const floor = config.delivery.timeout + Math.max(config.scheduler.lease, config.delivery.handoff_lease, config.concurrency.inflight_ttl) + config.scheduler.poll_interval;
  return Math.max(config.reconciler.orphan_grace, floor);
};

const msOfStamp = (ns: string): number => Number(BigInt(ns) / 1_000_000n);

/** `skipped`: the canary was missing (a rebuild's turn: it restores with its own delay). */
export type SweepSummary = { live: number; candidates: number; orphans: number; repaired: string[]; skipped?: boolean };

export type OrphanSweepDeps = {
  config: Config;
  reader: TopicReader;
  hot: OrphanRepair & Pick<RebuildState, 'isInitialized'>;
  log: Logger;
  clock: Clock;
  /** Told how many webhooks each sweep scheduled again (the repairs metric). */
  onRepaired?: (n: number) => void;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
};

/** Snapshots still due that have been due, and unchanged, for longer than the grace. */
const overdue = (live: Snapshot[], now: number, grace: number): RestoreItem[] =>
  live.flatMap((s) => {
    // A paused one waits in its pause's queue, not in the schedule; a parked one is scheduled.
    if (s.kind === 'paused') return [];
    const item = restoreItemOf(s);
    if (!WAITING.has(item.status.state) || !item.retry) return [];
    return now - Math.max(s.dueAt, msOfStamp(s.updatedAtNs)) >= grace ? [item] : [];
  });

export const createOrphanSweep = (d: OrphanSweepDeps) => {
  const rc = d.config.reconciler;
  const grace = orphanGrace(d.config);

  /** One fold of howk.state and one look at the hot state per restore_batch webhooks overdue. */
  const sweepOnce = async (): Promise<SweepSummary> => {
    if (!(await d.hot.isInitialized())) return { live: 0, candidates: 0, orphans: 0, repaired: [], skipped: true };
    const fold = createStateFold(d.log);
    await d.reader.readToEnd(d.config.kafka.topics.state, async (b) => b.records.forEach(fold.add), { idleTimeoutMs: rc.read_idle_timeout });
    const live = fold.live();
    const now = d.clock.now();
    const items = overdue(live, now, grace);
    const summary: SweepSummary = { live: live.length, candidates: items.length, orphans: 0, repaired: [] };
    for (let i = 0; i < items.length; i += rc.restore_batch) {
      const chunk = items.slice(i, i + rc.restore_batch);
      const bare = await d.hot.unscheduled(
        chunk.map((it) => ({ id: it.status.webhook_id, endpointHash: it.status.endpoint_hash })),
        d.clock.now(),
      );
      // A stored status newer than the snapshot, or one that ended, is the live system's.
      const orphans = chunk.filter((it) => {
        if (!bare.has(it.status.webhook_id)) return false;
        const stored = bare.get(it.status.webhook_id);
        return !stored || (WAITING.has(stored.state) && compareStamps(stored.updated_at_ns, it.status.updated_at_ns) <= 0);
      });
      summary.orphans += orphans.length;
      if (!orphans.length) continue;
      const at = d.clock.now();
      const repaired = await d.hot.reschedule(orphans.map((it) => ({ ...it, retry: { ...it.retry!, dueAt: at } })));
      const byId = new Map(orphans.map((it) => [it.status.webhook_id, it]));
      for (const id of repaired) {
        const it = byId.get(id)!;
        d.log.warn('orphaned retry scheduled again: howk.state says it is due, nothing in the hot state would attempt it', {
          webhook_id: id,
          config_id: it.status.config_id,
          state: it.status.state,
          attempts: it.status.attempts,
          was_due_at: it.status.next_retry_at,
        });
      }
      summary.repaired.push(...repaired);
    }
    if (summary.repaired.length) d.onRepaired?.(summary.repaired.length);
    return summary;
  };

  /** Sweeps every orphan_sweep_interval until `signal` aborts; a failed sweep is logged and tried at the next. */
  const run = async (signal: AbortSignal): Promise<void> => {
    const sleep = d.sleep ?? defaultSleep;
    if (rc.orphan_sweep_interval <= 0) return;
    while (!signal.aborted) {
      await sleep(rc.orphan_sweep_interval, signal).catch(() => {});
      if (signal.aborted) break;
      await sweepOnce().catch((e: unknown) => d.log.warn('orphan sweep failed; trying again at the next interval', { error: errorMessage(e) }));
    }
  };

  return { sweepOnce, run, grace };
};

export type OrphanSweep = ReturnType<typeof createOrphanSweep>;
