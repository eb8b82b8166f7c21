// Token bucket over (tokens, updated_at, now): `rate` tokens per second, at most `burst`.
export type Bucket = { tokens: number; at: number };

export type TakeResult = { ok: true } | { ok: false; waitMs: number };

export const takeToken = (b: Bucket, now: number, rate: number, burst: number): TakeResult => {
  const elapsed = Math.max(0, now - b.at) / 1000;
  b.tokens = Math.min(burst, b.tokens + elapsed * rate);
  b.at = now;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return { ok: true };
  }
  return { ok: false, waitMs: Math.ceil(((1 - b.tokens) / rate) * 1000) };
};
