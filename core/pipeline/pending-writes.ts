import { createBatcher } from '../domain/batcher';
import type { HotWriter, StatusWrite } from '../ports/hot-state';

/** The 'pending' statuses of one request's new webhooks, with their stamp and endpoint hashes. */
export type PendingWrite = { statuses: StatusWrite[]; at: number; endpoints: string[] };

/** Most statuses one merged write carries (one request alone may carry more). */
const MAX_MERGED = 1000;
/** The smallest stats bucket (the per-minute timeline): requests of one minute share every bucket. */
const MINUTE = 60_000;

export type PendingWriter = {
  /** Resolves once `w`'s statuses are written, or rejects with the error of its write. */
  write(w: PendingWrite): Promise<void>;
  /** Sends what waits now and resolves once every write asked for so far has returned (ok or not). */
  settle(): Promise<void>;
  /** Statuses waiting for a write to start. */
  readonly waiting: number;
};

/**
 * Writes the enqueuer's 'pending' statuses and their stats. Writes made while one is out wait
 * for it, then leave together: one batch per minute of their stamps, whose stats (counters,
 * timeline, unique endpoints) cost one set of commands instead of one set per request; with
 * single enqueues those were most of the api's Redis commands. An idle writer writes once the
 * current microtasks have run (the requests that one Kafka produce acknowledged resume in the
 * same tick, and leave in one write), or after `lingerMs`: at a light load every request came
 * alone, and its own round trip (a socket write and read in howk-api, a script call and the
 * stats commands in Redis) cost more than the rest of the enqueue.
 */
export const pendingWriter = (hot: HotWriter, lingerMs = 0): PendingWriter => {
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
    start: lingerMs > 0 ? { lingerMs } : 'microtask',
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
  // The writes not yet returned: a settle waits for those asked for before it (a flush may
  // send while another write is out, so the last one back is not always the last one asked).
  const out = new Set<Promise<unknown>>();
  return {
    write: (w) => {
      const done = batcher.add(w).then(({ result }) => {
        if (result.has(w)) throw result.get(w);
      });
      const tracked: Promise<unknown> = done.then(
        (): unknown => out.delete(tracked),
        (): unknown => out.delete(tracked),
      );
      out.add(tracked);
      return done;
    },
    get waiting() {
      return batcher.waiting;
    },
    settle: () => {
      if (!out.size) return Promise.resolve();
      batcher.flush();
      return Promise.all(out).then(() => undefined);
    },
  };
};

/**
 * `target` whose `methods` first settle the writes that wait (`settle`): the api's status,
 * listing and stats reads see every webhook this instance accepted, as they did when each
 * answer waited for its status write.
 */
export const readingOwnWrites = <T extends object>(target: T, settle: () => Promise<void>, methods: readonly string[]): T => {
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(t, k) {
      const v = Reflect.get(t, k, t) as unknown;
      if (typeof v !== 'function') return v;
      let f = bound.get(k);
      if (!f) {
        const fn = v as (...a: unknown[]) => unknown;
        f = methods.includes(String(k)) ? async (...a: unknown[]) => (await settle(), fn.apply(t, a)) : fn.bind(t);
        bound.set(k, f);
      }
      return f;
    },
  });
};
