import { describe, expect, it } from 'vitest';
import { MemoryHotState } from '../../core/memory/hot-state';
import { expirySweeper, startSweeping } from '../../core/memory/sweep';
import { DEFAULT_TTLS, fakeClock, HOUR, ns, statusOf } from '../contract/hot-state.fixtures';

// howk-dev's hot state drops expired entries in the background, not only when one is read
// again: after the TTLs, the maps are empty though nothing read them, and each sweep looks at
// no more entries than its budget.

const N = 2000;

const filled = async () => {
  const clock = fakeClock();
  const hot = new MemoryHotState(DEFAULT_TTLS, clock);
  const t = clock.now();
  for (let i = 0; i < N; i += 100) {
    const ids = Array.from({ length: 100 }, (_, k) => `wh_${i + k}`);
    await hot.claimIdempotency(
      ids.map((id) => ({ configId: 'cfg', key: `k-${id}`, webhookId: id })),
      24 * HOUR,
    );
    await hot.apply({
      statuses: ids.map((id, k) => ({ status: statusOf(id, ns(t, i + k)) })),
      retries: ids.filter((_, k) => k % 2 === 0).map((id) => ({ id, dueAt: t + HOUR, data: '{}' })),
      stats: { at: t, counts: { enqueued: ids.length }, endpoints: ids.map((id) => `https://example.com/${id}`) },
    });
    await hot.putDeadLetters(ids.filter((_, k) => k % 10 === 0).map((id) => ({ webhookId: id, configId: 'cfg', reasonType: 'exhausted', deadAtMs: t, record: '{}' })));
  }
  return { hot, clock };
};

const total = (s: Record<string, number>) => Object.values(s).reduce((a, b) => a + b, 0);

describe('in-memory hot state: the sweep of expired entries', () => {
  it('drops every expired entry nobody reads again, a bounded number per sweep, and keeps live ones', async () => {
    const { hot, clock } = await filled();
    const before = hot.sizes();
    expect(before).toEqual({ idempotency: N, statuses: N, retries: N / 2, counters: 1, endpoints: 1, dead_letters: N / 10 });

    // Nothing has expired yet: a sweep of everything drops nothing.
    clock.advance(23 * HOUR);
    expect(hot.sweep(100_000)).toBe(0);
    expect(hot.sizes()).toEqual(before);

    // Past the idempotency TTL (24 h) only those claims go.
    clock.advance(2 * HOUR);
    while (hot.sweep(500) > 0);
    expect(hot.sizes()).toEqual({ ...before, idempotency: 0 });

    // Past every TTL (status, retry data, dead letters 168 h; stats 48 h), in sweeps of 300.
    clock.advance(168 * HOUR);
    let sweeps = 0;
    for (let dropped = -1; dropped !== 0; sweeps++) {
      dropped = hot.sweep(300);
      expect(dropped).toBeLessThanOrEqual(300);
    }
    expect(hot.sizes()).toEqual({ idempotency: 0, statuses: 0, retries: 0, counters: 0, endpoints: 0, dead_letters: 0 });
    expect(sweeps).toBeGreaterThanOrEqual(Math.ceil((total(before) - N) / 300));
  });

  it('startSweeping empties the maps on its timer and stops when told', async () => {
    const { hot, clock } = await filled();
    clock.advance(200 * HOUR);
    const stop = startSweeping(hot, { intervalMs: 5, budget: 1000 });
    try {
      const end = Date.now() + 5000;
      while (total(hot.sizes()) > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
    } finally {
      stop();
    }
    expect(total(hot.sizes())).toBe(0);
  });

  it('a pass ends at the size the map had when it began, so new entries do not hold back the oldest', () => {
    const map = new Map<string, number>([['old', 0]]);
    const sweep = expirySweeper([{ map, expiresAt: (v) => v }]);
    // Each sweep adds live entries behind the cursor; the expired first entry is still found.
    for (let i = 0; i < 50; i++) {
      map.set(`new-${i}`, 1_000);
      sweep(10, 1);
    }
    expect(map.has('old')).toBe(false);
    expect(map.size).toBe(50);
  });
});
