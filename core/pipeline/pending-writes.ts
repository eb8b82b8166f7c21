import type { HotWriter, StatusWrite } from '../ports/hot-state';

/** The 'pending' statuses of one request's new webhooks, with their stamp and endpoint hashes. */
export type PendingWrite = { statuses: StatusWrite[]; at: number; endpoints: string[] };

/** Most statuses one merged write carries (one request alone may carry more). */
const MAX_MERGED = 1000;
/** The smallest stats bucket (the per-minute timeline): requests of one minute share every bucket. */
const MINUTE = 60_000;

type Queued = { w: PendingWrite; resolve: () => void; reject: (e: unknown) => void };

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
  let queue: Queued[] = [];
  let busy = false;

  const write = (group: Queued[]): Promise<void> => {
    const endpoints = new Set<string>();
    const statuses: StatusWrite[] = [];
    for (const { w } of group) {
      for (const s of w.statuses) statuses.push(s);
      for (const e of w.endpoints) endpoints.add(e);
    }
    let applied: Promise<void>;
    try {
      applied = hot.apply({ statuses, stats: { at: group[0]!.w.at, counts: { enqueued: statuses.length }, endpoints: [...endpoints] } });
    } catch (e) {
      applied = Promise.reject(e);
    }
    return applied.then(
      () => group.forEach((q) => q.resolve()),
      (e: unknown) => group.forEach((q) => q.reject(e)),
    );
  };

  const pump = (): void => {
    if (!queue.length) {
      busy = false;
      return;
    }
    busy = true;
    let n = 0;
    let size = 0;
    while (n < queue.length && (n === 0 || size + queue[n]!.w.statuses.length <= MAX_MERGED)) size += queue[n++]!.w.statuses.length;
    const taken = queue.slice(0, n);
    queue = queue.slice(n);
    const byMinute = new Map<number, Queued[]>();
    for (const q of taken) {
      const m = Math.floor(q.w.at / MINUTE);
      const g = byMinute.get(m);
      if (g) g.push(q);
      else byMinute.set(m, [q]);
    }
    void Promise.all([...byMinute.values()].map(write)).then(pump);
  };

  return (w: PendingWrite): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      queue.push({ w, resolve, reject });
      if (!busy) {
        busy = true;
        queueMicrotask(pump);
      }
    });
};
