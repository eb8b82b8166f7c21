import { createBatcher } from '../domain/batcher';
import type { HotWriter, StatusWrite } from '../ports/hot-state';

/** The 'pending' statuses of one request's new webhooks, with their stamp and endpoint hashes. */
export type PendingWrite = { statuses: StatusWrite[]; at: number; endpoints: string[] };

/** Most statuses one merged write carries (one request alone may carry more). */
const MAX_MERGED = 1000;
/** The smallest stats bucket (the per-minute timeline): requests of one minute share every bucket. */
const MINUTE = 60_000;

/**
 * Writes the enqueuer's 'pending' statuses and their stats. Writes made while one is out wait
 * for it, then leave together: one batch per minute of their stamps, whose stats (counters,
 * timeline, unique endpoints) cost one set of commands instead of one set per request; with
 * single enqueues those were most of the api's Redis commands. An idle writer writes once the
 * current microtasks have run: the requests that one Kafka produce acknowledged resume in the
 * same tick, and leave in one write instead of the first alone and the rest after it.
 * Each caller resolves once its statuses are written, or rejects with the error of its write.
 */
export const pendingWriter = (hot: HotWriter) => {
  const write = (group: PendingWrite[]): Promise<void> => {
    const endpoints = new Set<string>();
    const statuses: StatusWrite[] = [];
    for (const w of group) {
      for (const s of w.statuses) statuses.push(s);
      for (const e of w.endpoints) endpoints.add(e);
    }
    return hot.apply({ statuses, stats: { at: group[0]!.at, counts: { enqueued: statuses.length }, endpoints: [...endpoints] } });
  };
  const batcher = createBatcher<PendingWrite, Map<PendingWrite, unknown>>({
    start: 'microtask',
    maxWeight: MAX_MERGED,
    weight: (w) => w.statuses.length,
    // One write per minute of the stamps; each caller fails only with its own minute's write.
    run: async (taken) => {
      const byMinute = new Map<number, PendingWrite[]>();
      for (const w of taken) {
        const m = Math.floor(w.at / MINUTE);
        const g = byMinute.get(m);
        if (g) g.push(w);
        else byMinute.set(m, [w]);
      }
      const failed = new Map<PendingWrite, unknown>();
      await Promise.all(
        [...byMinute.values()].map(async (group) => {
          try {
            await write(group);
          } catch (e) {
            for (const w of group) failed.set(w, e);
          }
        }),
      );
      return failed;
    },
  });
  return (w: PendingWrite): Promise<void> =>
    batcher.add(w).then(({ result }) => {
      if (result.has(w)) throw result.get(w);
    });
};
