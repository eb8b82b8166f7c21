import { STAT_NAMES, type StatName } from './stats';

// Per-minute and per-quarter-hour outcome counters (GET /stats/timeline, the console's
// Overview). Written beside the hourly stats by HotWriter.apply; each bucket lives a little
// longer than the window that shows it, so the counters cost a bounded number of keys.

export type TimelineWindow = '1h' | '24h';
export const TIMELINE_WINDOWS: readonly TimelineWindow[] = ['1h', '24h'];

export type TimelineSpec = { bucketMs: number; buckets: number };
export const TIMELINE: Record<TimelineWindow, TimelineSpec> = {
  '1h': { bucketMs: 60_000, buckets: 60 },
  '24h': { bucketMs: 900_000, buckets: 96 },
};

export type TimelineCounts = Record<StatName, number>;
export type TimelineBucket = TimelineCounts & { start: string };
export type Timeline = { window: TimelineWindow; bucket_seconds: number; buckets: TimelineBucket[] };

export const bucketStart = (ms: number, bucketMs: number): number => Math.floor(ms / bucketMs) * bucketMs;

/** How long a bucket is kept: the window it shows plus one bucket. */
export const bucketTtlMs = (s: TimelineSpec): number => (s.buckets + 1) * s.bucketMs;

/** The bucket starts of a window ending with the bucket of `now`, oldest first. */
export const timelineStarts = (now: number, w: TimelineWindow): number[] => {
  const { bucketMs, buckets } = TIMELINE[w];
  const last = bucketStart(now, bucketMs);
  return Array.from({ length: buckets }, (_, i) => last - (buckets - 1 - i) * bucketMs);
};

export const zeroCounts = (): TimelineCounts => Object.fromEntries(STAT_NAMES.map((n) => [n, 0])) as TimelineCounts;

/** A Timeline from each bucket's counts (missing ones are zeros). */
export const timelineOf = (w: TimelineWindow, starts: number[], counts: (Partial<TimelineCounts> | undefined)[]): Timeline => ({
  window: w,
  bucket_seconds: TIMELINE[w].bucketMs / 1000,
  buckets: starts.map((s, i) => ({ start: new Date(s).toISOString(), ...zeroCounts(), ...counts[i] })),
});
