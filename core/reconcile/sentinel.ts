import type { Config } from '../config/schema';
import { errorMessage } from '../errors/errors';
import type { Logger } from '../ports/logger';
import { sleep as defaultSleep } from '../domain/time';
import type { RebuildState, RetrySchedule } from '../ports/hot-state';
import type { EnsureOutcome, Reconciler } from './reconciler';

// The runtime sentinel of every worker and scheduler: every reconciler.sentinel_interval
// it looks for the canary. Gone (Redis flushed or replaced by an empty one) → this
// process's consumers pause, the fleet rebuilds (one instance; the others wait for it),
// and they resume. An unreachable Redis is not a missing canary: nothing happens until it
// answers again (then, if it came back empty, the canary is missing).

/** Something that can stop taking new work for a while: a consumer, the scheduler's gate. */
export type Pausable = { pause(): void; resume(): void };

export type SentinelDeps = {
  config: Config;
  hot: RebuildState;
  reconciler: Pick<Reconciler, 'ensureInitialized'>;
  log: Logger;
  /** Read at each check: consumers may come and go. */
  pausables: () => Pausable[];
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
};

export type SentinelCheck = 'ok' | 'unreachable' | EnsureOutcome;

/** One check: what the sentinel does when it wakes up. */
export const sentinelCheck = async (d: SentinelDeps, signal?: AbortSignal): Promise<SentinelCheck> => {
  try {
    if (await d.hot.isInitialized()) return 'ok';
  } catch (e) {
    d.log.warn('sentinel: hot state unreachable', { error: errorMessage(e) });
    return 'unreachable';
  }
  d.log.warn('sentinel: canary missing (Redis lost its data): pausing consumers and rebuilding from Kafka');
  const paused = d.pausables();
  for (const p of paused) p.pause();
  try {
    return await d.reconciler.ensureInitialized(signal);
  } finally {
    for (const p of paused) p.resume();
    d.log.info('sentinel: consumers resumed');
  }
};

/** Checks every sentinel_interval until `signal` aborts. */
export const runSentinel = async (d: SentinelDeps, signal: AbortSignal): Promise<void> => {
  const sleep = d.sleep ?? defaultSleep;
  while (!signal.aborted) {
    await sleep(d.config.reconciler.sentinel_interval, signal);
    if (signal.aborted) return;
    await sentinelCheck(d, signal).catch((e) => d.log.warn('sentinel: check failed', { error: errorMessage(e) }));
  }
};

/**
 * The scheduler's pause switch: the same hot state, but its claimDueRetries hands out
 * nothing while paused, so no retry is moved while the schedule is being restored.
 */
export const pausableClaims = <H extends RetrySchedule>(hot: H): { hot: H; gate: Pausable } => {
  let paused = false;
  const gated = new Proxy(hot, {
    get(target, prop) {
      if (prop === 'claimDueRetries' && paused) return async () => [];
      // The pre-shard schedule waits too: a drain during a restore would race it for the shards.
      if (prop === 'drainLegacyRetries' && paused) return async () => 0;
      const v = Reflect.get(target, prop) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return {
    hot: gated,
    gate: {
      pause: () => void (paused = true),
      resume: () => void (paused = false),
    },
  };
};
