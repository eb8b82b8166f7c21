import type { ConcurrencyView, GuardParams } from './guard-types';
import { allowed, percentiles, slowness, type LimitState } from './adaptive-limit';

/** What GET /endpoints/:hash shows of an endpoint's adaptive limit (both guard adapters). */
export const concurrencyView = (s: LimitState, samples: readonly { at: number; ms: number }[], inflight: number, queued: number, now: number, p: GuardParams): ConcurrencyView => {
  const v = slowness(s, now, p.limits);
  const measured = p.maxInflightPerEndpoint > 0;
  return {
    limit: allowed(s),
    fast_lane_limit: measured ? Math.min(allowed(s), p.maxInflightPerEndpoint) : 0,
    latency_ms: { estimate: s.latMs || null, min: s.minMs || null, ...percentiles(samples, now, p.limits.windowMs) },
    inflight,
    queued,
    slow: measured && v.slow,
    slow_reason: measured ? v.reason : null,
  };
};
