import type { Webhook } from '../domain/webhook';

/**
 * The attempts this worker made recently, keyed by webhook id and pass (attempt + deferrals):
 * a record consumed again (a rewound partition, a consumer restarted after a crash, a batch
 * fetched again after a rebalance that left the partition here, a retry re-enqueued twice) is
 * not sent again when its pass is here. An entry holds until its outcome is durable (its
 * write's promise), then a mark; the oldest go first past `max` entries (0: none kept).
 */
export type RecentOutcomes = {
  /** An attempt of `w` was made; its outcome becomes durable with `durable` (see `settle`). */
  made(w: Webhook): void;
  /** The outcomes of these attempts are durable (`error` undefined) or will not be written by this pass (`error`). */
  settle(ws: readonly Webhook[], error?: unknown): void;
  /** Nothing known: undefined. Known: true once its outcome is durable, else a promise of that. */
  known(w: Webhook): true | Promise<void> | undefined;
  size(): number;
};

type Entry = { done: true } | { done: false; p: Promise<void>; resolve: () => void; reject: (e: unknown) => void };

export const passKey = (w: Webhook): string => `${w.id}\u0000${w.attempt + w.deferrals}`;

export const createRecentOutcomes = (max: number): RecentOutcomes => {
  const entries = new Map<string, Entry>();
  const DONE: Entry = { done: true };
  return {
    made(w) {
      if (max <= 0) return;
      const k = passKey(w);
      entries.delete(k);
      let resolve!: () => void;
      let reject!: (e: unknown) => void;
      const p = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
      // A copy that never waits on it must not leave an unhandled rejection behind.
      p.catch(() => {});
      entries.set(k, { done: false, p, resolve, reject });
      if (entries.size > max) entries.delete(entries.keys().next().value as string);
    },
    settle(ws, error) {
      for (const w of ws) {
        const k = passKey(w);
        const e = entries.get(k);
        if (!e || e.done) continue;
        if (error === undefined) {
          entries.set(k, DONE);
          e.resolve();
        } else {
          // Not written by this pass: a copy consumed again must send it again.
          entries.delete(k);
          e.reject(error);
        }
      }
    },
    known(w) {
      const e = entries.get(passKey(w));
      if (!e) return undefined;
      return e.done ? true : e.p;
    },
    size: () => entries.size,
  };
};
