import { sleep as realSleep } from './time';

// The one way Howk tries something again until it works: a log or Redis briefly away, a
// consumer that cannot start yet, a channel not subscribed. Doubling waits from `baseMs` up to
// `capMs`, spread by ±`jitter` (a fraction) so that instances restarted together do not retry
// in step; it stops when `signal` aborts or `retryIf` says the error is not worth another go.

export type RetryUntilOptions = {
  baseMs: number;
  capMs: number;
  /** ±fraction of each wait, 0 (the default) for exact waits. */
  jitter?: number;
  /** Aborting ends the wait at once and gives up with the last error. */
  signal?: AbortSignal;
  /** Whether to try again after `error` with `waitMs` to wait (default: always). */
  retryIf?: (error: unknown, waitMs: number, attempt: number) => boolean;
  /** Told of each failure that will be retried, before the wait. */
  onRetry?: (error: unknown, waitMs: number, attempt: number) => void;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
};

/** The wait after failure number `attempt` (0-based): base·2^attempt, capped, spread by ±jitter. */
export const retryDelay = (attempt: number, o: Pick<RetryUntilOptions, 'baseMs' | 'capMs' | 'jitter'>, rand: number): number => {
  const raw = Math.min(o.baseMs * 2 ** Math.min(attempt, 30), o.capMs);
  return Math.max(0, Math.round(raw * (1 + (o.jitter ?? 0) * (rand * 2 - 1))));
};

/** Calls `fn` until it resolves; throws its last error once aborted or refused by `retryIf`. */
export const retryUntil = async <T>(fn: (attempt: number) => Promise<T>, o: RetryUntilOptions): Promise<T> => {
  const wait = o.sleep ?? realSleep;
  const random = o.random ?? Math.random;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      const ms = retryDelay(attempt, o, random());
      if (o.signal?.aborted || (o.retryIf && !o.retryIf(e, ms, attempt))) throw e;
      o.onRetry?.(e, ms, attempt);
      await wait(ms, o.signal);
      if (o.signal?.aborted) throw e;
    }
  }
};
