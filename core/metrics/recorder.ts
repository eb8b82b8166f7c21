import type { Histogram } from './histogram';
import { STAGE_BUCKETS, STAGES, type Stage, type StageRecorder } from './stages';

// The stage recorder the Node processes use: plain bucket counters, one binary search and three
// additions per observation (prom-client's own Histogram.observe validates and hashes its
// labels on every call, ~15× the cost). The host renders snapshots as Prometheus histograms.

export type Counts = { buckets: Float64Array; sum: number; count: number };

const BOUNDS = Float64Array.from(STAGE_BUCKETS);
export const counts = (): Counts => ({ buckets: new Float64Array(BOUNDS.length + 1), sum: 0, count: 0 });

/** Adds `n` observations of `seconds` (the last slot is +Inf). */
export const add = (c: Counts, seconds: number, n: number): void => {
  let lo = 0;
  let hi = BOUNDS.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (BOUNDS[mid]! < seconds) lo = mid + 1;
    else hi = mid;
  }
  c.buckets[lo]! += n;
  c.sum += seconds * n;
  c.count += n;
};

/** Cumulative form, as Prometheus exposes a histogram. */
export const cumulative = (c: Counts): Histogram => {
  const out: number[] = [];
  let acc = 0;
  for (const b of c.buckets) out.push((acc += b));
  return { bounds: [...STAGE_BUCKETS, Infinity], counts: out, sum: c.sum, count: c.count };
};

export type StageSnapshot = { stages: Map<Stage, Histogram>; delivered: { first: Histogram; retry: Histogram } };

/**
 * A recorder of stage times and enqueue→delivery times, and snapshots of what it holds.
 * Times are ms in, seconds out; a negative time (clocks of two hosts) counts as 0.
 */
export const createStageRecorder = (): { recorder: StageRecorder; snapshot: () => StageSnapshot } => {
  const stages = new Map<Stage, Counts>(STAGES.map((s) => [s, counts()]));
  const first = counts();
  const retry = counts();
  const sec = (ms: number) => (ms > 0 ? ms / 1000 : 0);
  return {
    recorder: {
      stage(s, ms, n = 1) {
        add(stages.get(s)!, sec(ms), n);
      },
      delivered(ms, isRetry) {
        add(isRetry ? retry : first, sec(ms), 1);
      },
    },
    snapshot: () => ({
      stages: new Map([...stages].map(([s, c]) => [s, cumulative(c)])),
      delivered: { first: cumulative(first), retry: cumulative(retry) },
    }),
  };
};
