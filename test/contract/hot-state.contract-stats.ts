import { expect, it } from 'vitest';
import { STAT_NAMES, type HotWriter, type StatsReader } from '../../core/ports/hot-state';
import { HOUR, elapse, roleContract, withHarness, type MakeHotState } from './hot-state.fixtures';

// StatsReader: the hourly counters and unique endpoints HotWriter.apply counts.

export const statsContract = (name: string, make: MakeHotState<HotWriter & StatsReader>): void =>
  roleContract('stats (hourly buckets)', name, make, (ctx) => {
    const zero = Object.fromEntries(STAT_NAMES.map((n) => [n, 0]));

    it('sums counters over the hours of the window and counts unique endpoints across them', async () => {
      const { state, clock } = ctx.h();
      const now = clock.now();
      await state.apply({ stats: { at: now, counts: { enqueued: 3, delivered: 2 }, endpoints: ['e1', 'e2'] } });
      await state.apply({ stats: { at: now, counts: { enqueued: 1, failed: 0 }, endpoints: ['e2'] } });
      await state.apply({ stats: { at: now - HOUR, counts: { enqueued: 10, retried: 4 }, endpoints: ['e1', 'e3'] } });
      await state.apply({ stats: { at: now - 2 * HOUR, counts: { enqueued: 100, dead_lettered: 1 }, endpoints: ['e4'] } });

      expect(await state.stats(now, 1)).toEqual({ ...zero, enqueued: 4, delivered: 2, unique_endpoints: 2 });
      expect(await state.stats(now, 2)).toEqual({ ...zero, enqueued: 14, delivered: 2, retried: 4, unique_endpoints: 3 });
      expect(await state.stats(now, 3)).toEqual({ ...zero, enqueued: 114, delivered: 2, retried: 4, dead_lettered: 1, unique_endpoints: 4 });
      expect(await state.stats(now - HOUR, 1)).toEqual({ ...zero, enqueued: 10, retried: 4, unique_endpoints: 2 });
    });

    it('answers zeros for an empty window', async () => {
      const { state, clock } = ctx.h();
      expect(await state.stats(clock.now(), 24)).toEqual({ ...zero, unique_endpoints: 0 });
      expect(await state.stats(clock.now(), 0)).toEqual({ ...zero, unique_endpoints: 0 });
    });

    it('counts in the UTC hour of `at`, not of the clock', async () => {
      const { state } = ctx.h();
      const at = Date.UTC(2025, 0, 1, 23, 59, 59, 999);
      await state.apply({ stats: { at, counts: { exhausted: 2 }, endpoints: ['e1'] } });
      expect((await state.stats(at + 1, 1)).exhausted).toBe(0);
      expect(await state.stats(at + 1, 2)).toEqual({ ...zero, exhausted: 2, unique_endpoints: 1 });
    });

    it('forgets counters after stats_ttl', async () => {
      await withHarness(ctx, { ttls: { stats_ttl: 300 } }, async ({ state, clock }) => {
        const now = clock.now();
        await state.apply({ stats: { at: now, counts: { delivered: 1 }, endpoints: ['e1'] } });
        expect((await state.stats(now, 1)).delivered).toBe(1);
        await elapse(clock, 450);
        expect(await state.stats(now, 1)).toEqual({ ...zero, unique_endpoints: 0 });
      });
    });
  });
