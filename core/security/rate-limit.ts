// A token bucket per API key: `rate` tokens per second, at most `burst` banked. Pure
// `take` over (bucket, now) so a test drives it with a fake clock; `createRateLimiter`
// keeps the buckets of one api instance in memory.

export type Bucket = { tokens: number; at: number };

export type Take = { ok: boolean; bucket: Bucket; /** ms until one token is available (0 when ok) */ waitMs: number };

export const take = (b: Bucket | undefined, now: number, rate: number, burst: number): Take => {
  const start = b ?? { tokens: burst, at: now };
  const tokens = Math.min(burst, start.tokens + (Math.max(0, now - start.at) * rate) / 1000);
  if (tokens >= 1) return { ok: true, bucket: { tokens: tokens - 1, at: now }, waitMs: 0 };
  return { ok: false, bucket: { tokens, at: now }, waitMs: Math.ceil(((1 - tokens) * 1000) / rate) };
};

export type RateLimiter = (key: string, now: number) => { ok: true } | { ok: false; retryAfterSec: number };

/** rate <= 0: no limit. */
export const createRateLimiter = (rate: number, burst: number): RateLimiter => {
  const buckets = new Map<string, Bucket>();
  return (key, now) => {
    if (rate <= 0) return { ok: true };
    const t = take(buckets.get(key), now, rate, burst);
    buckets.delete(key);
    // Re-inserted at the end: the map's first entry is the least recently used one.
    buckets.set(key, t.bucket);
    if (buckets.size > 100_000) buckets.delete(buckets.keys().next().value as string);
    return t.ok ? { ok: true } : { ok: false, retryAfterSec: Math.max(1, Math.ceil(t.waitMs / 1000)) };
  };
};
