import type { Config } from '../config/schema';
import type { Webhook } from '../domain/webhook';
import { sleep } from '../domain/time';
import type { Clock } from '../ports/clock';
import type { Guards } from '../ports/guards';
import { untilAnswered, type OutageState } from './degraded-admission';
import type { LocalRates } from './local-rates';

// A Svix endpoint's throttleRate, taken before admission so that a throttled webhook holds no
// lease. Its bucket lives in Redis; while Redis does not answer (degraded.enabled) each worker
// keeps the rate as its own ceiling (docs/RELIABILITY.md, "Redis unreachable").

export type ThrottleDeps = {
  config: Config;
  clock: Clock;
  guards?: Guards;
  isStopping?: () => boolean;
  endpointThrottle?: (w: Webhook) => { endpointId: string; rate: number } | undefined;
  outage: OutageState;
  rates: LocalRates;
};

/** Longest nap of a webhook waiting for a local token before it looks again (Redis may be back). */
const WAIT_MS = 100;

export type Throttled = { kind: 'parked'; webhook: Webhook; until: number; reason: 'rate_limited'; at: number };

/** A park until the endpoint's bucket has a token (Redis), or undefined once the webhook may go. */
export const createThrottle = (d: ThrottleDeps) => {
  const { config } = d;
  const parked = (w: Webhook, now: number, waitMs: number): Throttled | undefined =>
    waitMs > 0 ? { kind: 'parked', webhook: w, until: now + waitMs, reason: 'rate_limited', at: now } : undefined;

  return async (w: Webhook): Promise<Throttled | undefined> => {
    const t = d.endpointThrottle?.(w);
    const take = d.guards?.takeToken?.bind(d.guards);
    if (!t || !take) return undefined;
    const now = d.clock.now();
    // Without degraded mode the rate is Redis's alone: the webhook waits for it, in its batch.
    if (!config.degraded.enabled) return parked(w, now, await untilAnswered(() => take(w.endpoint_hash, t.endpointId, t.rate, t.rate, d.clock.now()), config, d.isStopping));
    const key = `throttle:${w.endpoint_hash}:${t.endpointId}`;
    for (;;) {
      if (d.outage.shouldAsk()) {
        try {
          const waitMs = await take(w.endpoint_hash, t.endpointId, t.rate, t.rate, d.clock.now());
          d.outage.answered();
          return parked(w, now, waitMs);
        } catch (e) {
          if (d.isStopping?.()) throw e;
          d.outage.failed(e);
          continue;
        }
      }
      // Degraded: the whole rate as this worker's ceiling, waited for in the lane (a park needs Redis).
      const due = d.rates.wait(key, t.rate, t.rate, d.clock.now());
      if (due === 0) {
        d.rates.take(key);
        return undefined;
      }
      if (d.isStopping?.()) throw new Error('worker stopping: a delivery waiting for its turn gives up');
      await sleep(Math.min(due, WAIT_MS));
    }
  };
};
