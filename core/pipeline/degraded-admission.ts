import type { Config } from '../config/schema';
import { retryUntil } from '../domain/retry-until';
import type { Webhook } from '../domain/webhook';
import { errorMessage } from '../errors/errors';
import type { Clock } from '../ports/clock';
import type { Admission, PauseScope } from '../ports/guards';
import type { Logger } from '../ports/logger';
import type { LocalGuards } from './local-guards';
import type { LocalRates } from './local-rates';
import type { OriginSlots } from './origin-slots';

// Admission while Redis does not answer (docs/RELIABILITY.md, "Redis unreachable: delivery
// degrades, it does not stop"): decided by this worker alone (core/pipeline/local-guards.ts),
// Redis asked again every degraded.recheck_interval.

/**
 * Whether admission asks Redis now. After a failure it does not, until the recheck time; then
 * one admission asks (the probe) while the others go on deciding locally: with a Redis that
 * hangs rather than refuses, every admission asking would wait out the command timeout.
 */
export const createOutageState = (clock: Clock, log: Logger, recheckMs: number, onBack?: () => void) => {
  let down = false;
  let probing = false;
  let until = 0;
  return {
    /** True when this admission is to ask Redis (it is up, or this one is the probe). */
    shouldAsk(): boolean {
      if (!down) return true;
      if (probing || clock.now() < until) return false;
      probing = true;
      return true;
    },
    isDown: (): boolean => down,
    failed(e: unknown): void {
      if (!down) log.warn('guards unreachable: delivering within local bounds (degraded.*) until Redis answers', { error: errorMessage(e) });
      down = true;
      probing = false;
      until = clock.now() + recheckMs;
    },
    answered(): void {
      if (down) {
        log.info('guards answer again: admission by Redis resumes');
        onBack?.();
      }
      down = false;
      probing = false;
    },
  };
};

export type OutageState = ReturnType<typeof createOutageState>;

export type DegradedDeps = {
  local: LocalGuards;
  outage: OutageState;
  slots: OriginSlots;
  clock: Clock;
  recheckMs: number;
  /** rate_limit.* of every endpoint, kept per worker (rate 0: none). */
  rate: { rate: number; burst: number };
  rates: LocalRates;
  isStopping?: () => boolean;
  /** Sleeps until a local completion of the endpoint (or `ms`). */
  nap: (hash: string, ms: number) => Promise<void>;
};

/** A local 'go' takes no Redis lease: nothing to end there. */
const NONE = { endpoint: false, domain: false } as const;
const NOOP = () => {};
/** Longest wait of a webhook at its local bound before it looks again (a local completion wakes it sooner). */
const WAIT_MS = 50;

/**
 * One admission decided locally: a go (with the origin's connection slot), a park (an open
 * circuit, a pause), or 'ask' once Redis is to be asked again. A webhook at its local bound
 * waits for a local completion.
 */
export const admitLocally = async (
  d: DegradedDeps,
  w: Webhook,
  place: { origin: string; host: string },
  passPause: readonly PauseScope['kind'][],
  ceiling?: number,
): Promise<{ a: Admission; release: () => void } | 'ask'> => {
  for (;;) {
    if (d.outage.shouldAsk()) return 'ask';
    const { rate, burst } = d.rate;
    const key = `rate:${w.endpoint_hash}`;
    // Over the endpoint's rate the webhook waits in its lane: a park would need Redis to hold it.
    const due = rate > 0 ? d.rates.wait(key, rate, burst, d.clock.now()) : 0;
    if (due > 0) {
      if (d.isStopping?.()) throw new Error('worker stopping: a delivery waiting for its turn gives up');
      await d.nap(w.endpoint_hash, Math.min(due, WAIT_MS));
      continue;
    }
    const a = d.local.admit(w.id, w.endpoint_hash, place.host, w.config_id, d.clock.now(), passPause, ceiling);
    if (a.kind === 'go') {
      if (rate > 0) d.rates.take(key);
      const release = d.slots.take(place.origin) ?? (await d.slots.acquire(place.origin));
      return { a: { kind: 'go', probe: a.probe, counted: NONE }, release };
    }
    if (a.kind === 'park') return { a: { kind: 'park', reason: 'circuit_open', until: a.until }, release: NOOP };
    // Only Redis holds a paused webhook: it goes back to the retry schedule (its batch commits
    // once Redis has it), due at once, and meets the pause in Redis when it comes back.
    if (a.kind === 'paused') return { a: { kind: 'park', reason: 'paused', until: d.clock.now() + d.recheckMs }, release: NOOP };
    if (d.isStopping?.()) throw new Error('worker stopping: a delivery waiting for its turn gives up');
    await d.nap(w.endpoint_hash, WAIT_MS);
  }
};

/** Calls `fn` until it answers (degraded.enabled), asking again every degraded.recheck_interval; or once, as before. */
export const untilAnswered = <T>(fn: () => Promise<T>, config: Config, isStopping?: () => boolean): Promise<T> => {
  const every = config.degraded.recheck_interval;
  return retryUntil(fn, { baseMs: every, capMs: every, retryIf: () => config.degraded.enabled && !isStopping?.() });
};
