import type { Lane } from '../domain/webhook';
import type { DeliveryResponse } from '../domain/delivery-response';
import type { CircuitOutcome } from './circuit';

// Adaptive concurrency limit of one endpoint (or one host), in the spirit of TCP Vegas and
// gradient limiters: the limit grows while the measured latency stays near its minimum and
// the limit is in use, shrinks when latency rises, and backs off on every timeout, 5xx,
// 429 or connection error. The Redis scripts (admitDelivery.lua, completeDelivery.lua)
// mirror this file operation for operation, so that both compute the same doubles:
// test/unit/adaptive-limit.test.ts and test/integration/redis-guards-lua.test.ts share vectors.

export type LimitParams = {
  /** Limit of an endpoint never measured (clamped into [floor, ceiling]). */
  initial: number;
  floor: number;
  ceiling: number;
  /** Latency up to tolerance × minimum (+ SLACK_MS) counts as "near the minimum". */
  tolerance: number;
  /** Recent latency above this makes the endpoint slow. */
  slowThresholdMs: number;
  /** A timeout within this window makes the endpoint slow. */
  windowMs: number;
};

export type LimitState = {
  limit: number;
  /** Lowest latency seen, drifting slowly up towards a lasting change (0 = none yet). */
  minMs: number;
  /** Recent latency: moving average of successful answers and timeouts (0 = none yet). */
  latMs: number;
  /** When the last timeout ended (0 = never). */
  timeoutAt: number;
};

/** One finished attempt. `drop`: timeout, 5xx, 408, 429 or connection error. */
export type LimitSample = { ms: number; drop: boolean; timeout: boolean };

export type SlowVerdict = { slow: boolean; reason: 'latency' | 'timeouts' | null };

/** Absolute slack (ms): jitter of a few ms (the worker's own event loop included) on a fast endpoint is no congestion. */
export const SLACK_MS = 20;
/** Weight of the newest limit proposal (the limit moves a fifth of the way per sample). */
export const SMOOTHING = 0.2;
/** Weight of the newest latency in the moving average. */
export const LATENCY_WEIGHT = 0.2;
/** How far the minimum moves towards a higher sample: a lasting change is learnt within some hundreds of samples. */
export const MIN_DRIFT = 0.002;
/** Multiplicative decrease on a drop. */
export const BACKOFF = 0.9;
/** Lowest gradient: latency far above its minimum halves the proposal, never less. */
export const MIN_GRADIENT = 0.5;

const bounds = (p: LimitParams): [number, number] => [Math.min(p.floor, p.ceiling), p.ceiling];
const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));

export const freshLimit = (p: LimitParams): LimitState => {
  const [lo, hi] = bounds(p);
  return { limit: clamp(p.initial, lo, hi), minMs: 0, latMs: 0, timeoutAt: 0 };
};

/**
 * The state after one sample. `inflight` is how many deliveries were on the wire for the
 * endpoint when it ended (this one included): a limit that is not in use does not grow.
 */
export const recordSample = (s: LimitState, x: LimitSample, inflight: number, now: number, p: LimitParams): LimitState => {
  const [lo, hi] = bounds(p);
  let { limit, minMs, latMs, timeoutAt } = s;
  if (x.drop) {
    limit = Math.max(lo, limit * BACKOFF);
    if (x.timeout) {
      timeoutAt = now;
      // How long a timeout took is latency too; a fast 503 says nothing about it.
      latMs = latMs === 0 ? x.ms : latMs + (x.ms - latMs) * LATENCY_WEIGHT;
    }
    return { limit: Math.min(hi, limit), minMs, latMs, timeoutAt };
  }
  minMs = minMs === 0 || x.ms < minMs ? x.ms : minMs + (x.ms - minMs) * MIN_DRIFT;
  latMs = latMs === 0 ? x.ms : latMs + (x.ms - latMs) * LATENCY_WEIGHT;
  const near = p.tolerance * minMs + SLACK_MS;
  const gradient = latMs <= near ? 1 : Math.max(MIN_GRADIENT, near / latMs);
  const queue = inflight * 2 >= limit ? Math.sqrt(limit) : 0;
  const target = limit * gradient + queue;
  limit = clamp(limit * (1 - SMOOTHING) + target * SMOOTHING, lo, hi);
  return { limit, minMs, latMs, timeoutAt };
};

/** Slow: recent latency above the threshold, or a timeout within the window. */
export const slowness = (s: LimitState, now: number, p: LimitParams): SlowVerdict => {
  if (s.timeoutAt > 0 && now - s.timeoutAt < p.windowMs) return { slow: true, reason: 'timeouts' };
  if (s.latMs > p.slowThresholdMs) return { slow: true, reason: 'latency' };
  return { slow: false, reason: null };
};

/** Whole deliveries the limit allows at once (at least 1). */
export const allowed = (s: LimitState): number => Math.max(1, Math.floor(s.limit));

export type LaneDecision = 'go' | 'wait' | 'divert' | 'recovered';

/**
 * The lane rule. Fast lane: under the limit go; at it, a slow endpoint is diverted to the
 * slow lane and a fast one waits its turn (keeping per-config order). Slow lane: an
 * endpoint no longer slow goes back to the fast lane; a slow one is delivered from here.
 */
export const laneDecision = (lane: Lane, atLimit: boolean, slow: boolean): LaneDecision => {
  if (lane === 'slow') return slow ? 'go' : 'recovered';
  if (!atLimit) return 'go';
  return slow ? 'divert' : 'wait';
};

/** The slow lane's pace for an endpoint (per second): in flight ≈ limit by Little's law, within [1, max]. */
export const slowLanePace = (limit: number, latMs: number, max: number): number => (latMs <= 0 ? max : clamp((limit * 1000) / latMs, 1, max));

/** A webhook told to wait counts as queued this long after it last asked. */
export const QUEUED_WINDOW_MS = 2000;
/** Latency samples kept per endpoint for the percentiles. */
export const LATENCY_SAMPLES = 200;

/** p50/p90 (nearest rank) of the samples taken within the window before `now`. */
export const percentiles = (samples: readonly { at: number; ms: number }[], now: number, windowMs: number): { p50: number | null; p90: number | null; samples: number } => {
  const xs = samples
    .filter((s) => now - s.at < windowMs)
    .map((s) => s.ms)
    .sort((a, b) => a - b);
  if (!xs.length) return { p50: null, p90: null, samples: 0 };
  const rank = (q: number) => xs[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)]!;
  return { p50: rank(0.5), p90: rank(0.9), samples: xs.length };
};

/**
 * What one attempt tells the limit, from its answer and its circuit outcome: a timeout, a
 * 429 or a circuit failure (5xx, 408, connection error) is a drop; a success (the endpoint
 * answered) is a latency sample; anything neutral to the circuit says nothing.
 */
export const limitSample = (r: DeliveryResponse, outcome: CircuitOutcome): LimitSample | undefined => {
  if (r.kind === 'timeout') return { ms: r.durationMs, drop: true, timeout: true };
  if ((r.kind === 'response' && r.status === 429) || outcome === 'failure') return { ms: r.durationMs, drop: true, timeout: false };
  if (outcome === 'success') return { ms: r.durationMs, drop: false, timeout: false };
  return undefined;
};
