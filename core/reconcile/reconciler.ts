import type { Config } from '../config/schema';
import { iso } from '../domain/time';
import { UnavailableError, errorMessage } from '../errors/errors';
import type { Logger } from '../ports/logger';
import { retryUntil } from '../domain/retry-until';
import { sleep as defaultSleep } from '../domain/time';
import type { Clock } from '../ports/clock';
import type { DeadLetterStore, RebuildState } from '../ports/hot-state';
import type { DeadLetterEntry, RestoreItem, TopicReader } from '../ports/recovery';
import { deadLetterEntryOf, deadProgress, deadStatusOf } from './deadletters';
import type { GuardRestore } from '../ports/guards';
import { replayGuards, restoreHeld, splitHeld, type GuardSummary } from './guard-replay';
import type { Snapshot } from '../records/state';
import { createStateFold, restoreItemOf, type FoldStats } from './replay';

// Rebuilds the hot state from Kafka, because a Redis loss must lose nothing (Kafka is the
// source of truth), with a canary + lock protocol (docs/RELIABILITY.md, Redis loss):
//   canary present → go on; missing → take the lock; the winner rebuilds, sets the canary
//   and releases the lock; the others poll until the canary is back (or the lock frees up
//   because its holder died, and one of them takes over).
// Nothing is flushed first: restores are last-write-wins and never replace a live retry,
// so writes the fleet makes during the rebuild survive it, and two rebuilds racing (a lock
// lost to a stall) only repeat work.

export type RebuildSummary = {
  state: FoldStats & { live: number; restored: number; idled: number[] };
  deadletters: { records: number; indexed: number; restored: number; idled: number[] };
  /** Pauses, open circuits and held webhooks (absent without guards: howk-dev without limits). */
  guards?: GuardSummary;
  ms: number;
};

export type ReconcilerDeps = {
  config: Config;
  hot: RebuildState & DeadLetterStore;
  reader: TopicReader;
  log: Logger;
  clock: Clock;
  /** Pauses and circuits to restore from howk.guards (absent: they are not rebuilt). */
  guards?: GuardRestore;
  /** This instance's lock token (unique per process). */
  owner: string;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Told of each rebuild this instance completed (the rebuilds metric). */
  onRebuilt?: (summary: RebuildSummary) => void;
};

export type EnsureOutcome = 'present' | 'rebuilt' | 'waited';

export const WAIT_POLL_MS = 500;
const MAX_BACKOFF_MS = 10_000;

const chunks = <T>(xs: T[], n: number): T[][] => {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
};

/**
 * A restored retry that was due already (by `now`) waits `delayMs`: the snapshot cannot
 * tell whether the scheduler had re-enqueued the webhook before the loss. If it had, that
 * copy is processed first, and its outcome replaces the restored schedule (a new retry) or
 * removes it (a terminal outcome ends it): no duplicate delivery. If not, the webhook
 * resumes a little later than planned. A retry due later keeps its time (nothing can have
 * re-enqueued it yet), which also keeps a restored lease acknowledgeable by its holder.
 */
export const deferred = (item: RestoreItem, now: number, delayMs: number): RestoreItem =>
  item.retry && item.retry.dueAt <= now ? { ...item, retry: { ...item.retry, dueAt: now + delayMs } } : item;

export const createReconciler = (d: ReconcilerDeps) => {
  const { config, hot, log } = d;
  const rc = config.reconciler;
  const topics = config.kafka.topics;
  const sleep = d.sleep ?? defaultSleep;

  const rebuildNow = async (): Promise<RebuildSummary> => {
    const t0 = d.clock.now();
    // Pauses first: the held webhooks of howk.state go back behind those still in force.
    const g = d.guards
      ? await replayGuards({
          reader: d.reader,
          guards: d.guards,
          topic: topics.guards,
          idleTimeoutMs: rc.read_idle_timeout,
          circuitTtlMs: config.ttl.circuit_state_ttl,
          now: () => d.clock.now(),
          log,
        })
      : undefined;
    const fold = createStateFold(log);
    const read = await d.reader.readToEnd(topics.state, async (b) => b.records.forEach(fold.add), { idleTimeoutMs: rc.read_idle_timeout });
    const live = fold.live();
    let restored = 0;
    const now = d.clock.now();
    const schedule = async (snaps: Snapshot[]) => {
      let n = 0;
      for (const c of chunks(snaps, rc.restore_batch)) n += await hot.restore(c.map((s) => deferred(restoreItemOf(s), now, rc.restore_delay)));
      return n;
    };
    const { held, rest } = g ? splitHeld(live, g.paused) : { held: new Map(), rest: live };
    restored += await schedule(rest);
    if (g && d.guards) {
      const [n, h] = await restoreHeld(d.guards, hot, held.values(), rc.restore_batch, schedule);
      restored += n;
      g.summary.held = h;
    }

    // Dead letters: listable again, and the terminal status of webhooks that died - unless
    // a snapshot recorded more progress than the death: the webhook was retried since.
    const dl = { records: 0, indexed: 0, restored: 0, idled: [] as number[] };
    const dlRead = await d.reader.readToEnd(
      topics.deadletter,
      async (b) => {
        dl.records += b.records.length;
        const entries = b.records.flatMap((r) => (r.value === null ? [] : [deadLetterEntryOf(r.value)])).filter((e): e is DeadLetterEntry => e !== null);
        for (const c of chunks(entries, rc.restore_batch)) {
          await hot.putDeadLetters(c);
          dl.indexed += c.length;
          const statuses: RestoreItem[] = [];
          for (const e of c) {
            const s = deadStatusOf(e);
            if (s && fold.seenProgress(e.webhookId) <= deadProgress(e)) statuses.push({ status: s });
          }
          dl.restored += await hot.restore(statuses);
        }
      },
      { idleTimeoutMs: rc.read_idle_timeout },
    );
    dl.idled = dlRead.idled;
    const summary = { state: { ...fold.stats, live: live.length, restored, idled: read.idled }, deadletters: dl, ...(g && { guards: g.summary }), ms: d.clock.now() - t0 };
    if (read.idled.length || dlRead.idled.length) log.warn('rebuild stopped waiting for partitions whose tail was compacted away', { state: read.idled, deadletter: dlRead.idled });
    return summary;
  };

  /** Rebuild while holding the lock: heartbeats keep it, a time limit bounds it. */
  const rebuildLocked = async (): Promise<RebuildSummary> => {
    const beat = setInterval(
      () => {
        hot.renewLock(d.owner, rc.lock_ttl).then(
          (ok) => ok || log.warn('rebuild lock lost (another instance may rebuild too; restores are idempotent)'),
          (e) => log.warn('rebuild lock not renewed', { error: errorMessage(e) }),
        );
      },
      Math.max(100, Math.floor(rc.lock_ttl / 3)),
    );
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new UnavailableError(`rebuild took longer than ${rc.rebuild_timeout} ms`)), rc.rebuild_timeout);
    });
    try {
      log.warn('hot state rebuild: replaying Kafka', { owner: d.owner });
      const summary = await Promise.race([rebuildNow(), limit]);
      await hot.markInitialized(JSON.stringify({ by: d.owner, at: iso(d.clock.now()), restored: summary.state.restored, dead_letters: summary.deadletters.indexed }));
      log.warn('hot state rebuilt; canary set', { ...summary.state, deadletters: summary.deadletters, guards: summary.guards, ms: summary.ms });
      d.onRebuilt?.(summary);
      return summary;
    } finally {
      clearInterval(beat);
      clearTimeout(timer);
      await hot.releaseLock(d.owner).catch((e) => log.warn('rebuild lock not released (it expires)', { error: errorMessage(e) }));
    }
  };

  /**
   * Returns once the canary is present: at once, after this instance rebuilt, or after it
   * waited for another instance's rebuild. Failures (Redis or Kafka unreachable) are
   * retried with backoff until `signal` aborts.
   */
  const ensureInitialized = async (signal?: AbortSignal): Promise<EnsureOutcome> => {
    /** One look: the canary present, a rebuild done by this instance, or another instance's rebuild to wait for. */
    const check = async (): Promise<EnsureOutcome | 'waiting'> => {
      if (await hot.isInitialized()) return 'present';
      if (!(await hot.acquireLock(d.owner, rc.lock_ttl))) return 'waiting';
      // Another instance may have finished between our check and our lock.
      if (await hot.isInitialized()) {
        await hot.releaseLock(d.owner);
        return 'waited';
      }
      await rebuildLocked();
      return 'rebuilt';
    };
    let waited = false;
    while (!signal?.aborted) {
      // A failure (Redis or Kafka unreachable) backs off; a look that succeeds starts the backoff over.
      const seen = await retryUntil(check, {
        baseMs: WAIT_POLL_MS,
        capMs: MAX_BACKOFF_MS,
        signal,
        sleep,
        onRetry: (e, wait) => log.warn('hot state check or rebuild failed; trying again', { error: errorMessage(e), in_ms: wait }),
      }).catch((e: unknown) => {
        if (signal?.aborted) return 'stopped' as const;
        throw e;
      });
      if (seen === 'stopped') break;
      if (seen === 'present') return waited ? 'waited' : 'present';
      if (seen !== 'waiting') return seen;
      if (!waited) log.info('canary missing; another instance is rebuilding: waiting for it');
      waited = true;
      await sleep(WAIT_POLL_MS, signal);
    }
    throw new UnavailableError('stopped while waiting for the hot state to be initialized');
  };

  /** howk-reconciler --force: rebuild even though the canary is there (waits for the lock). */
  const forceRebuild = async (signal?: AbortSignal): Promise<RebuildSummary> => {
    while (!signal?.aborted) {
      if (await hot.acquireLock(d.owner, rc.lock_ttl)) return rebuildLocked();
      await sleep(WAIT_POLL_MS, signal);
    }
    throw new UnavailableError('stopped while waiting for the rebuild lock');
  };

  return { ensureInitialized, forceRebuild, rebuildNow };
};

export type Reconciler = ReturnType<typeof createReconciler>;
