import { TIMELINE, TIMELINE_WINDOWS, bucketStart, bucketTtlMs, timelineOf, timelineStarts, type Timeline, type TimelineCounts, type TimelineWindow } from '../domain/timeline';
import type { HotBatch, StatName } from '../ports/hot-state';

// The timeline counters of the in-memory hot state: one map entry per bucket, as the Redis
// adapter keeps one hash per bucket. Expired buckets are dropped as new ones are written.

type TimelineBucket = { counts: Partial<TimelineCounts>; expiresAt: number };

export class MemoryTimeline {
  private readonly buckets = new Map<string, TimelineBucket>();

  add(stats: NonNullable<HotBatch['stats']>, now: number): void {
    for (const [k, b] of this.buckets) if (b.expiresAt <= now) this.buckets.delete(k);
    for (const w of TIMELINE_WINDOWS) {
      const spec = TIMELINE[w];
      const start = bucketStart(stats.at, spec.bucketMs);
      const k = `${w}:${start}`;
      const b = this.buckets.get(k) ?? { counts: {}, expiresAt: 0 };
      for (const [name, n] of Object.entries(stats.counts) as [StatName, number][]) if (n) b.counts[name] = (b.counts[name] ?? 0) + n;
      b.expiresAt = now + bucketTtlMs(spec);
      this.buckets.set(k, b);
    }
  }

  read(now: number, w: TimelineWindow): Timeline {
    const starts = timelineStarts(now, w);
    return timelineOf(
      w,
      starts,
      starts.map((s) => {
        const b = this.buckets.get(`${w}:${s}`);
        return b && b.expiresAt > now ? b.counts : undefined;
      }),
    );
  }
}
