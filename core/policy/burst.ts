// Burst absorption: how many webhooks one endpoint can take at once before any of them
// dead-letters, in the worst case where every attempt on the wire lasts the whole delivery
// timeout (docs/OPERATIONS.md, CLI: howk doctor burst).
//
// The model: the endpoint serves its in-flight limit at a time, each for `timeoutMs`, so it
// gets through `limit / timeout` webhooks per second, in arrival order: the i-th webhook of a
// burst (0-based) has its turn at floor(i / limit) × timeout. Until its turn a webhook's
// attempts fail (refused at the limit, circuit open), each failure scheduling the next after
// base × 2^min(k, 10) (capped at max_delay, shortened by the whole jitter: the worst case).
// Its last attempt therefore starts `schedule` after arrival; a webhook whose turn comes later
// than that dead-letters. Attempts are counted as instantaneous: the real ones take time,
// which only lengthens the schedule, so the figure is a floor.

export type BurstParams = {
  /** In-flight limit of the endpoint (deliveries at once). */
  limit: number;
  /** Delivery timeout, ms: how long each attempt holds its slot in the worst case. */
  timeoutMs: number;
  /** Attempts before a webhook is exhausted. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** ±fraction of spread on each delay; the worst case takes the shortest. */
  jitter: number;
};

export type BurstReport = {
  /** Webhooks per second the endpoint gets through when every attempt times out. */
  throughputPerSec: number;
  /** Delays between attempts, ms, in order (maxAttempts - 1 of them). */
  delaysMs: number[];
  /** When the last attempt of a webhook starts, ms after it arrived. */
  scheduleMs: number;
  /** The largest burst with no dead letter. */
  absorbable: number;
  /** For a given burst: how long the endpoint needs for it, and how many of it dead-letter. */
  burst?: { size: number; drainMs: number; deadLetters: number };
};

/** The worst-case (shortest) delay after the 0-based attempt `k` fails. */
export const worstDelayMs = (k: number, p: Pick<BurstParams, 'baseDelayMs' | 'maxDelayMs' | 'jitter'>): number =>
  Math.min(p.baseDelayMs * 2 ** Math.min(k, 10), p.maxDelayMs) * (1 - p.jitter);

export const burstAbsorption = (p: BurstParams, burstSize?: number): BurstReport => {
  if (!(p.limit >= 1) || !(p.timeoutMs > 0) || !(p.maxAttempts >= 1)) throw new RangeError('limit, timeout and attempts must be positive');
  const delaysMs = Array.from({ length: p.maxAttempts - 1 }, (_, k) => worstDelayMs(k, p));
  const scheduleMs = delaysMs.reduce((a, b) => a + b, 0);
  // Turns start at 0, T, 2T, ...: floor(schedule / T) + 1 waves of `limit` webhooks each.
  const waves = Math.floor(scheduleMs / p.timeoutMs) + 1;
  const absorbable = Math.floor(p.limit) * waves;
  const throughputPerSec = p.limit / (p.timeoutMs / 1000);
  const report: BurstReport = { throughputPerSec, delaysMs, scheduleMs, absorbable };
  if (burstSize !== undefined) {
    report.burst = { size: burstSize, drainMs: (burstSize / throughputPerSec) * 1000, deadLetters: Math.max(0, burstSize - absorbable) };
  }
  return report;
};
