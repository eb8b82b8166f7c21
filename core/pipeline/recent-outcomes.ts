import type { Webhook } from '../domain/webhook';

/**
 * The attempts this worker made recently, keyed by webhook id and pass (attempt + deferrals):
 * a record consumed again (a rewound partition, a consumer restarted after a crash, a batch
 * fetched again after a rebalance that left the partition here, a retry re-enqueued twice) is
 * not sent again when its pass is here. An entry is pending until its outcome is durable,
 * then done; the oldest go first past `max` entries (0: none kept).
 */
export type RecentOutcomes = {
  /** An attempt of `w` was made; its outcome is being written (see `settle`). */
  made(w: Webhook): void;
  /** The outcomes of these attempts are durable (`error` undefined) or will not be written by this pass (`error`). */
  settle(ws: readonly Webhook[], error?: unknown): void;
  /** Nothing known: undefined. Known: true once its outcome is durable, else a promise of that. */
  known(w: Webhook): true | Promise<void> | undefined;
  /** Whether `w`'s pass is here (no promise made). */
  has(w: Webhook): boolean;
  size(): number;
};

/** `waiting`: copies that wait for the outcome (a promise is made only for them: most passes are never asked about). */
type RecentPass = { done: boolean; waiting?: { resolve: () => void; reject: (e: unknown) => void }[] };

/** A first pass is keyed by the id alone: no string is built for most deliveries (ids hold no NUL). */
export const passKey = (w: Webhook): string => (w.attempt + w.deferrals === 0 ? w.id : `${w.id}\u0000${w.attempt + w.deferrals}`);

export const createRecentOutcomes = (max: number): RecentOutcomes => {
  const entries = new Map<string, RecentPass>();
  // Insertion order for eviction, as a ring: finding a Map's oldest key after many deletes
  // walks the deleted slots (V8 compacts its tables only on resize), which cost the engine
  // bench a quarter of its time per delivery.
  const ring: (string | undefined)[] = new Array<string | undefined>(Math.max(0, max));
  let pos = 0;
  const evict = (k: string) => {
    const gone = entries.get(k);
    if (!gone) return;
    entries.delete(k);
    // A copy waiting on a pass forgotten before its outcome was written sends it again.
    for (const x of gone.waiting ?? []) x.reject(new Error('pass forgotten before its outcome was written'));
  };
  return {
    made(w) {
      if (max <= 0) return;
      const k = passKey(w);
      const e = entries.get(k);
      if (e) {
        e.done = false;
        return;
      }
      const oldest = ring[pos];
      if (oldest !== undefined) evict(oldest);
      ring[pos] = k;
      pos = (pos + 1) % max;
      entries.set(k, { done: false });
    },
    settle(ws, error) {
      for (const w of ws) {
        const k = passKey(w);
        const e = entries.get(k);
        if (!e || e.done) continue;
        // Not written by this pass: a copy consumed again must send it again.
        if (error !== undefined) entries.delete(k);
        else e.done = true;
        const waiting = e.waiting;
        e.waiting = undefined;
        for (const x of waiting ?? []) {
          if (error === undefined) x.resolve();
          else x.reject(error);
        }
      }
    },
    known(w) {
      const e = entries.get(passKey(w));
      if (!e) return undefined;
      if (e.done) return true;
      return new Promise<void>((resolve, reject) => (e.waiting ??= []).push({ resolve, reject }));
    },
    has: (w) => entries.has(passKey(w)),
    size: () => entries.size,
  };
};
