// Token bucket over (tokens, updated_at, now): `rate` tokens per second, at most `burst`.
// The one bucket of core: the guards' memory backend, the edge's gate, the api's per-key
// limit and a worker's own rates while Redis is away all count with it.
export type Bucket = { tokens: number; at: number };

export type TakeResult = { ok: true } | { ok: false; waitMs: number };

/** Adds to `b`, in place, what `rate` earned since `b.at`, at most `burst`. */
export const refill = (b: Bucket, now: number, rate: number, burst: number): Bucket => {
  const elapsed = Math.max(0, now - b.at) / 1000;
  b.tokens = Math.min(burst, b.tokens + elapsed * rate);
  b.at = now;
  return b;
};

/** Ms until a bucket holding `tokens` has a whole one at `rate` per second; 0 when it has. */
export const msUntilToken = (tokens: number, rate: number): number => (tokens >= 1 ? 0 : Math.ceil(((1 - tokens) / rate) * 1000));

export const takeToken = (b: Bucket, now: number, rate: number, burst: number): TakeResult => {
  refill(b, now, rate, burst);
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return { ok: true };
  }
  return { ok: false, waitMs: msUntilToken(b.tokens, rate) };
};
