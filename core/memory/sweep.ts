// Expired entries of the in-memory stores are dropped when read, but most are never read
// again: without a sweep, howk-dev's heap grows with every webhook for as long as the TTLs
// (ttl.status_ttl: a week). The sweep walks the maps a bounded number of entries per call,
// resuming where the last one stopped, so a tick costs the same however large they are.

/** A map of expiring entries, and what else to forget when one of them goes. */
export type SweptMap<V> = { map: Map<string, V>; expiresAt: (v: V) => number; onDrop?: (key: string, v: V) => void };

type Cursor = { it: Iterator<[string, unknown]> | undefined; left: number };

/**
 * A function that looks at no more than `budget` entries of the maps, in turn, and drops the
 * expired ones; it returns how many it dropped. A pass over a map ends after as many entries
 * as the map held when the pass began, so entries added meanwhile cannot keep it from
 * returning to the oldest; one call starts at most one pass per map.
 */
export const expirySweeper = (maps: readonly SweptMap<any>[]) => {
  const cursors: Cursor[] = maps.map(() => ({ it: undefined, left: 0 }));
  let turn = 0;
  return (now: number, budget: number): number => {
    let looked = 0;
    let dropped = 0;
    const started = maps.map(() => false);
    for (let idle = 0; looked < budget && idle < maps.length;) {
      const i = turn;
      turn = (turn + 1) % maps.length;
      const m = maps[i]!;
      const cur = cursors[i]!;
      if (cur.left <= 0 && !started[i]) {
        started[i] = true;
        cur.left = m.map.size;
        cur.it = m.map.entries();
      }
      // The budget is shared, so that one large map does not starve the others.
      const share = Math.max(1, Math.ceil((budget - looked) / maps.length));
      let n = 0;
      while (n < share && cur.left > 0) {
        const next = cur.it!.next();
        if (next.done) {
          cur.left = 0;
          break;
        }
        n++;
        cur.left--;
        const [k, v] = next.value;
        if (m.expiresAt(v) <= now) {
          m.map.delete(k);
          m.onDrop?.(k, v);
          dropped++;
        }
      }
      looked += n;
      idle = n === 0 ? idle + 1 : 0;
    }
    return dropped;
  };
};

/**
 * howk-dev's sweep: 50,000 entries looked at a second (under a millisecond of CPU), above the
 * rate it adds them (about 13,000 webhooks accepted a second at most, docs/BENCHMARKS.md), so
 * expired entries cannot pile up faster than they go.
 */
export const SWEEP = { intervalMs: 1000, budget: 50_000 } as const;

export type Sweepable = { sweep(budget: number): number };

/** Sweeps `target` every `intervalMs`, `budget` entries at a time, until the returned stop is called. */
export const startSweeping = (target: Sweepable, { intervalMs, budget }: { intervalMs: number; budget: number } = SWEEP): (() => void) => {
  const timer = setInterval(() => target.sweep(budget), intervalMs);
  return () => clearInterval(timer);
};
