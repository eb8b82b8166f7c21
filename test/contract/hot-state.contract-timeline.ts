import { expect, it } from 'vitest';
import type { HotWriter, TimelineReader } from '../../core/ports/hot-state';
import { bucketStart, zeroCounts } from '../../core/domain/timeline';
import { roleContract, type MakeHotState } from './hot-state.fixtures';

// TimelineReader: the per-minute (1h) and per-quarter-hour (24h) counters HotWriter.apply counts.

const MIN = 60_000;

export const timelineContract = (name: string, make: MakeHotState<HotWriter & TimelineReader>): void =>
  roleContract('timeline (minute and quarter-hour buckets)', name, make, (ctx) => {
    it('counts each outcome in the minute of `at`, oldest bucket first, the current minute last', async () => {
      const { state, clock } = ctx.h();
      const now = clock.now();
      await state.apply({ stats: { at: now, counts: { enqueued: 3, delivered: 2 } } });
      await state.apply({ stats: { at: now, counts: { enqueued: 1, failed: 0 } } });
      await state.apply({ stats: { at: now - 5 * MIN, counts: { dead_lettered: 1, retried: 4 } } });
      await state.apply({ stats: { at: now - 61 * MIN, counts: { enqueued: 100 } } });

      const t = await state.timeline(now, '1h');
      expect(t.window).toBe('1h');
      expect(t.bucket_seconds).toBe(60);
      expect(t.buckets).toHaveLength(60);
      expect(t.buckets[59]).toEqual({ ...zeroCounts(), start: new Date(bucketStart(now, MIN)).toISOString(), enqueued: 4, delivered: 2 });
      expect(t.buckets[54]).toEqual({ ...zeroCounts(), start: new Date(bucketStart(now, MIN) - 5 * MIN).toISOString(), dead_lettered: 1, retried: 4 });
      // The hour-old batch is outside the 1h window: every other bucket is zero.
      const total = t.buckets.reduce((s, b) => s + b.enqueued, 0);
      expect(total).toBe(4);
    });

    it('sums the same outcomes per quarter hour over 24 hours', async () => {
      const { state, clock } = ctx.h();
      const now = clock.now();
      const q = 15 * MIN;
      await state.apply({ stats: { at: now, counts: { enqueued: 2, delivered: 1 } } });
      await state.apply({ stats: { at: now - 61 * MIN, counts: { enqueued: 100, exhausted: 1 } } });
      const t = await state.timeline(now, '24h');
      expect(t.bucket_seconds).toBe(900);
      expect(t.buckets).toHaveLength(96);
      expect(t.buckets.at(-1)).toMatchObject({ start: new Date(bucketStart(now, q)).toISOString(), enqueued: 2, delivered: 1 });
      const old = t.buckets.find((b) => b.start === new Date(bucketStart(now - 61 * MIN, q)).toISOString());
      expect(old).toMatchObject({ enqueued: 100, exhausted: 1, delivered: 0 });
      expect(t.buckets.reduce((s, b) => s + b.enqueued, 0)).toBe(102);
    });

    it('answers zeros when nothing was counted', async () => {
      const { state, clock } = ctx.h();
      const t = await state.timeline(clock.now(), '1h');
      expect(t.buckets.every((b) => b.enqueued + b.delivered + b.failed + b.dead_lettered === 0)).toBe(true);
    });
  });
