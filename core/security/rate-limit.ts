// A token bucket per API key: `rate` tokens per second, at most `burst` banked. Pure
// `take` over (bucket, now) so a test drives it with a fake clock; `createRateLimiter`
// keeps the buckets of one api instance in memory.
import { takeToken, type Bucket } from '../policy/token-bucket';

export type Take = { ok: boolean; bucket: Bucket; /** ms until one token is available (0 when ok) */ waitMs: number };

export const take = (b: Bucket | undefined, now: number, rate: number, burst: number): Take => {
  const bucket = b ? { ...b } : { tokens: burst, at: now };
  const t = takeToken(bucket, now, rate, burst);
  return { ok: t.ok, bucket, waitMs: t.ok ? 0 : t.waitMs };
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
