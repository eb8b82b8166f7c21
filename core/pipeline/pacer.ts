import { slowLanePace } from '../policy/adaptive-limit';
import type { Clock } from '../ports/clock';
import { sleep } from '../domain/time';

/**
 * The slow lane's pace, per endpoint: limit / latency per second (what the endpoint absorbs,
 * by Little's law), at most `maxPerSecond`, learnt from each admission that lets one of its
 * deliveries go. An endpoint not learnt yet is not held back (its first admission teaches it).
 */
export const createEndpointPacer = (maxPerSecond: number, clock: Clock, wait: (ms: number) => Promise<unknown> = sleep) => {
  const intervals = new Map<string, number>();
  const next = new Map<string, number>();
  return {
    learn(endpoint: string, limit: number, latencyMs: number): void {
      if (intervals.size >= 10_000 && !intervals.has(endpoint)) intervals.delete(intervals.keys().next().value as string);
      intervals.set(endpoint, 1000 / slowLanePace(limit, latencyMs, maxPerSecond));
    },
    /** Resolves at the endpoint's next turn. */
    async pace(endpoint: string): Promise<void> {
      const interval = intervals.get(endpoint) ?? 0;
      const now = clock.now();
      const at = Math.max(now, next.get(endpoint) ?? 0);
      next.set(endpoint, at + interval);
      if (next.size > 10_000) for (const [k, t] of next) if (t < now) next.delete(k);
      if (at > now) await wait(at - now);
    },
    /** Deliveries per second the endpoint is paced at (undefined: not learnt). */
    rate: (endpoint: string): number | undefined => (intervals.has(endpoint) ? 1000 / intervals.get(endpoint)! : undefined),
  };
};

export type EndpointPacer = ReturnType<typeof createEndpointPacer>;
