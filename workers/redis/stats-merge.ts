import type { HotBatch } from '../../core/ports/hot-state';

type Stats = NonNullable<HotBatch['stats']>;

/** The smallest stats bucket (the per-minute timeline): stats of one minute land in the same keys. */
const MINUTE = 60_000;

/**
 * The stats of the batches one write carries, one entry per minute of their stamps: the
 * counters add up, the endpoints are a union. Each entry costs the same commands as one
 * batch's stats (an INCRBY and PEXPIRE per counter, a HINCRBY per counter and window, a
 * PFADD), so batches that share a write share them too. Counters commute, so merging changes
 * no total; only what order they are added in.
 */
export const mergeStats = (batches: readonly HotBatch[]): Stats[] => {
  const byMinute = new Map<number, { at: number; counts: Record<string, number>; endpoints: Set<string> }>();
  for (const b of batches) {
    const s = b.stats;
    if (!s) continue;
    const m = Math.floor(s.at / MINUTE);
    let g = byMinute.get(m);
    if (!g) byMinute.set(m, (g = { at: s.at, counts: {}, endpoints: new Set() }));
    for (const [name, n] of Object.entries(s.counts)) if (n) g.counts[name] = (g.counts[name] ?? 0) + n;
    for (const e of s.endpoints ?? []) g.endpoints.add(e);
  }
  return [...byMinute.values()].map((g) => ({ at: g.at, counts: g.counts, ...(g.endpoints.size ? { endpoints: [...g.endpoints] } : {}) }));
};
