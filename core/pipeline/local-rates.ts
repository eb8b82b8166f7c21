// Rate limits one worker keeps on its own while Redis does not answer (docs/RELIABILITY.md,
// "Redis unreachable: delivery degrades, it does not stop"): the shared token buckets live in
// Redis, so each worker holds the whole rate as its own ceiling instead.
import { msUntilToken, refill, type Bucket } from '../policy/token-bucket';

/** Buckets kept: the endpoints a worker delivers to recently, not every one it ever saw. */
const MAX_BUCKETS = 50_000;

export const createLocalRates = () => {
  const buckets = new Map<string, Bucket>();

  const refilled = (key: string, rate: number, burst: number, now: number): Bucket => {
    let b = buckets.get(key);
    if (!b) {
      // Empty at first: what Redis let go just before it left counts against the same second.
      b = { tokens: 0, at: now };
      if (buckets.size >= MAX_BUCKETS) buckets.delete(buckets.keys().next().value as string);
      buckets.set(key, b);
    }
    return refill(b, now, rate, burst);
  };

  return {
    /** Ms until `key` has a token at `rate` per second (at most `burst` saved up); 0: one is there now. */
    wait(key: string, rate: number, burst: number, now: number): number {
      const b = refilled(key, rate, burst, now);
      return msUntilToken(b.tokens, rate);
    },
    /** Forgets every bucket (Redis answers again: the next outage starts them empty). */
    clear: (): void => buckets.clear(),
    /** Spends the token `wait` found (call it right after a 0, in the same turn). */
    take(key: string): void {
      const b = buckets.get(key);
      if (b) b.tokens -= 1;
    },
  };
};

export type LocalRates = ReturnType<typeof createLocalRates>;
