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
import { createStateFold, restoreItemOf, type FoldStats, type StateFold } from './replay';

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

export type Reconciler = {
  /**
   * Returns once the canary is present: at once, after this instance rebuilt, or after it
   * waited for another instance's rebuild. Failures (Redis or Kafka unreachable) are
   * retried with backoff until `signal` aborts.
   */
  ensureInitialized(signal?: AbortSignal): Promise<EnsureOutcome>;
  /** howk-reconciler --force: rebuild even though the canary is there (waits for the lock). */
  forceRebuild(signal?: AbortSignal): Promise<RebuildSummary>;
  rebuildNow(): Promise<RebuildSummary>;
};

/** The deps with what every stage below reads of them resolved once. */
type Ctx = ReconcilerDeps & { rc: Config['reconciler']; topics: Config['kafka']['topics']; sleep: NonNullable<ReconcilerDeps['sleep']> };
type DeadLetterSummary = RebuildSummary['deadletters'];

export const createReconciler = (d: ReconcilerDeps): Reconciler => {
  const c: Ctx = { ...d, rc: d.config.reconciler, topics: d.config.kafka.topics, sleep: d.sleep ?? defaultSleep };
  return { ensureInitialized: (signal) => ensureInitialized(c, signal), forceRebuild: (signal) => forceRebuild(c, signal), rebuildNow: () => rebuildNow(c) };
};

const rebuildNow = async (c: Ctx): Promise<RebuildSummary> => {
  const t0 = c.clock.now();
  // Pauses first: the held webhooks of howk.state go back behind those still in force.
  const g = c.guards ? await replayGuardsOf(c, c.guards) : undefined;
  const fold = createStateFold(c.log);
  const read = await c.reader.readToEnd(c.topics.state, async (b) => b.records.forEach(fold.add), { idleTimeoutMs: c.rc.read_idle_timeout });
  const live = fold.live();
  const restored = await restoreLive(c, live, g);
  const { dl, idled } = await replayDeadLetters(c, fold);
  const summary = { state: { ...fold.stats, live: live.length, restored, idled: read.idled }, deadletters: dl, ...(g && { guards: g.summary }), ms: c.clock.now() - t0 };
  if (read.idled.length || idled.length) c.log.warn('rebuild stopped waiting for partitions whose tail was compacted away', { state: read.idled, deadletter: idled });
  return summary;
};

const replayGuardsOf = (c: Ctx, guards: GuardRestore): ReturnType<typeof replayGuards> =>
  replayGuards({
    reader: c.reader,
    guards,
    topic: c.topics.guards,
    idleTimeoutMs: c.rc.read_idle_timeout,
    circuitTtlMs: c.config.ttl.circuit_state_ttl,
    now: () => c.clock.now(),
    log: c.log,
  });

/** Schedules the live snapshots again; those of paused scopes go back as held. Returns how many were restored. */
const restoreLive = async (c: Ctx, live: Snapshot[], g: Awaited<ReturnType<typeof replayGuards>> | undefined): Promise<number> => {
  const now = c.clock.now();
  const schedule = async (snaps: Snapshot[]): Promise<number> => {
    let n = 0;
    for (const ch of chunks(snaps, c.rc.restore_batch)) n += await c.hot.restore(ch.map((s) => deferred(restoreItemOf(s), now, c.rc.restore_delay)));
    return n;
  };
  const { held, rest } = g ? splitHeld(live, g.paused) : { held: new Map(), rest: live };
  let restored = await schedule(rest);
  if (g && c.guards) {
    const [n, h] = await restoreHeld(c.guards, c.hot, held.values(), c.rc.restore_batch, schedule);
    restored += n;
    g.summary.held = h;
  }
  return restored;
};

// Dead letters: listable again, and the terminal status of webhooks that died - unless
// a snapshot recorded more progress than the death: the webhook was retried since.
const replayDeadLetters = async (c: Ctx, fold: StateFold): Promise<{ dl: DeadLetterSummary; idled: number[] }> => {
  const dl: DeadLetterSummary = { records: 0, indexed: 0, restored: 0, idled: [] };
  const dlRead = await c.reader.readToEnd(
    c.topics.deadletter,
    async (b) => {
      dl.records += b.records.length;
      const entries = b.records.flatMap((r) => (r.value === null ? [] : [deadLetterEntryOf(r.value)])).filter((e): e is DeadLetterEntry => e !== null);
      for (const ch of chunks(entries, c.rc.restore_batch)) {
        await c.hot.putDeadLetters(ch);
        dl.indexed += ch.length;
        const statuses: RestoreItem[] = [];
        for (const e of ch) {
          const s = deadStatusOf(e);
          if (s && fold.seenProgress(e.webhookId) <= deadProgress(e)) statuses.push({ status: s });
        }
        dl.restored += await c.hot.restore(statuses);
      }
    },
    { idleTimeoutMs: c.rc.read_idle_timeout },
  );
  dl.idled = dlRead.idled;
  return { dl, idled: dlRead.idled };
};

/** Rebuild while holding the lock: heartbeats keep it, a time limit bounds it. */
const rebuildLocked = async (c: Ctx): Promise<RebuildSummary> => {
  const { rc, hot, log } = c;
  const beat = setInterval(
    () => {
      hot.renewLock(c.owner, rc.lock_ttl).then(
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
    log.warn('hot state rebuild: replaying Kafka', { owner: c.owner });
    const summary = await Promise.race([rebuildNow(c), limit]);
    await hot.markInitialized(JSON.stringify({ by: c.owner, at: iso(c.clock.now()), restored: summary.state.restored, dead_letters: summary.deadletters.indexed }));
    log.warn('hot state rebuilt; canary set', { ...summary.state, deadletters: summary.deadletters, guards: summary.guards, ms: summary.ms });
    c.onRebuilt?.(summary);
    return summary;
  } finally {
    clearInterval(beat);
    clearTimeout(timer);
    await hot.releaseLock(c.owner).catch((e) => log.warn('rebuild lock not released (it expires)', { error: errorMessage(e) }));
  }
};

/** One look: the canary present, a rebuild done by this instance, or another instance's rebuild to wait for. */
const lookOnce = async (c: Ctx): Promise<EnsureOutcome | 'waiting'> => {
  if (await c.hot.isInitialized()) return 'present';
  if (!(await c.hot.acquireLock(c.owner, c.rc.lock_ttl))) return 'waiting';
  // Another instance may have finished between our check and our lock.
  if (await c.hot.isInitialized()) {
    await c.hot.releaseLock(c.owner);
    return 'waited';
  }
  await rebuildLocked(c);
  return 'rebuilt';
};

const ensureInitialized = async (c: Ctx, signal?: AbortSignal): Promise<EnsureOutcome> => {
  let waited = false;
  while (!signal?.aborted) {
    // A failure (Redis or Kafka unreachable) backs off; a look that succeeds starts the backoff over.
    const seen = await retryUntil(() => lookOnce(c), {
      baseMs: WAIT_POLL_MS,
      capMs: MAX_BACKOFF_MS,
      signal,
      sleep: c.sleep,
      onRetry: (e, wait) => c.log.warn('hot state check or rebuild failed; trying again', { error: errorMessage(e), in_ms: wait }),
    }).catch((e: unknown) => {
      if (signal?.aborted) return 'stopped' as const;
      throw e;
    });
    if (seen === 'stopped') break;
    if (seen === 'present') return waited ? 'waited' : 'present';
    if (seen !== 'waiting') return seen;
    if (!waited) c.log.info('canary missing; another instance is rebuilding: waiting for it');
    waited = true;
    await c.sleep(WAIT_POLL_MS, signal);
  }
  throw new UnavailableError('stopped while waiting for the hot state to be initialized');
};

const forceRebuild = async (c: Ctx, signal?: AbortSignal): Promise<RebuildSummary> => {
  while (!signal?.aborted) {
    if (await c.hot.acquireLock(c.owner, c.rc.lock_ttl)) return rebuildLocked(c);
    await c.sleep(WAIT_POLL_MS, signal);
  }
  throw new UnavailableError('stopped while waiting for the rebuild lock');
};
