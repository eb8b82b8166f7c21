import type { Answer } from './harness';
import type { Fault } from './trace';

// Where a run's duplicates come from (docs/RELIABILITY.md, "Duplicates under kill -9"): each
// 2xx beyond a webhook's first, set against the first one. The receiver numbers its
// connections and notes when each closed: a worker killed with -9 drops every connection at
// once, so a first copy whose connection closed within a few ms after a kill was sent by the
// killed worker, and the time from its 2xx to that kill is the window its outcome missed.

type Rx = { byId: Map<string, { oks?: Answer[] }>; closedAt: Map<number, number> };

/** A connection closed this soon after a kill was closed by it. */
const KILL_CLOSE_MS = 250;

const bucket = (ms: number, edges: number[]): string => {
  for (let i = 0; i < edges.length; i++) if (ms < edges[i]!) return i === 0 ? `<${edges[0]}ms` : `${edges[i - 1]}-${edges[i]}ms`;
  return `>=${edges[edges.length - 1]}ms`;
};
const add = (m: Record<string, number>, k: string) => (m[k] = (m[k] ?? 0) + 1);

export type DuplicateBreakdown = {
  duplicates: number;
  /** The copy went over the first copy's connection (the same worker, alive). */
  same_connection: number;
  /** The first copy's worker was killed after its 2xx (its connection closed by a kill). */
  first_worker_killed: number;
  /** Of those: ms from the first copy's 2xx to the kill. */
  killed_after_first_ms: Record<string, number>;
  /** The copy carried the same attempt number (the same pass again) or a later one (a retry). */
  same_attempt: number;
  later_attempt: number;
  /** ms from the first 2xx to the copy. */
  copy_after_first_ms: Record<string, number>;
};

export const duplicateBreakdown = (rx: Rx, faults: Fault[]): DuplicateBreakdown => {
  const kills = faults.filter((f) => f.what.startsWith('kill -9 worker')).map((f) => f.at);
  const out: DuplicateBreakdown = {
    duplicates: 0,
    same_connection: 0,
    first_worker_killed: 0,
    killed_after_first_ms: {},
    same_attempt: 0,
    later_attempt: 0,
    copy_after_first_ms: {},
  };
  for (const e of rx.byId.values()) {
    const oks = e.oks ?? [];
    if (oks.length < 2) continue;
    const first = oks[0]!;
    const closed = rx.closedAt.get(first.conn);
    const kill = closed === undefined ? undefined : kills.filter((k) => k <= closed && closed - k <= KILL_CLOSE_MS && k >= first.at).pop();
    for (const copy of oks.slice(1)) {
      out.duplicates++;
      if (copy.conn === first.conn) out.same_connection++;
      if (kill !== undefined) {
        out.first_worker_killed++;
        add(out.killed_after_first_ms, bucket(kill - first.at, [50, 100, 200, 500, 1000, 5000]));
      }
      if (copy.attempt === first.attempt) out.same_attempt++;
      else out.later_attempt++;
      add(out.copy_after_first_ms, bucket(copy.at - first.at, [1000, 3000, 5000, 10_000, 20_000, 40_000]));
    }
  }
  return out;
};
