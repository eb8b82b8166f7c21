// Rate limits one worker keeps on its own while Redis does not answer (docs/RELIABILITY.md,
// "Redis unreachable: delivery degrades, it does not stop"): the shared token buckets live in
// Redis, so each worker holds the whole rate as its own ceiling instead.

/** Buckets kept: the endpoints a worker delivers to recently, not every one it ever saw. */
const MAX_BUCKETS = 50_000;

type Bucket = { tokens: number; at: number };

export const createLocalRates = () => {
  const buckets = new Map<string, Bucket>();

  const refill = (key: string, rate: number, burst: number, now: number): Bucket => {
    let b = buckets.get(key);
    if (!b) {
      // Empty at first: what Redis let go just before it left counts against the same second.
      b = { tokens: 0, at: now };
      if (buckets.size >= MAX_BUCKETS) buckets.delete(buckets.keys().next().value as string);
      buckets.set(key, b);
    }
    b.tokens = Math.min(burst, b.tokens + (Math.max(0, now - b.at) * rate) / 1000);
    b.at = now;
    return b;
  };

  return {
    /** Ms until `key` has a token at `rate` per second (at most `burst` saved up); 0: one is there now. */
    wait(key: string, rate: number, burst: number, now: number): number {
      const b = refill(key, rate, burst, now);
      return b.tokens >= 1 ? 0 : Math.ceil(((1 - b.tokens) * 1000) / rate);
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
