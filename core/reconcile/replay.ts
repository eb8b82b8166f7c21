import type { WebhookState, WebhookStatus } from '../domain/status';
import { iso } from '../domain/time';
import { compareStamps, parseSnapshot, type Snapshot } from '../records/state';
import { CompactedTable } from '../log/compacted-table';
import type { Logger } from '../ports/logger';
import type { RestoreItem } from '../ports/recovery';

// The replay rules of a rebuild: which howk.state record of a webhook is its state.
//
// Records of one webhook share a key, hence a partition, and are folded in offset order:
//  1. A tombstone (terminal: delivered, exhausted, dead) ends the webhook, whatever came
//     before it. Nothing older than it can bring the webhook back.
//  2. A snapshot after a tombstone brings the webhook back only when it records more
//     progress (attempt + deferrals of the webhook it would resume) than any snapshot seen
//     before the tombstone: that is a new attempt of the same id (POST /webhooks/:id/retry).
//     A redelivered, superseded attempt written late by a zombie worker does not qualify,
//     so a delivered webhook is never resurrected by a rebuild, compacted or not.
//  3. Between snapshots, more progress wins, then the newer updated_at_ns (the same
//     last-write-wins as the status in Redis); on a tie the later offset wins.
//  4. Records without a key and snapshots that do not parse are skipped and counted: one
//     bad record must not stop a rebuild.
// Progress, not only the clock, orders snapshots because workers' clocks differ and a
// parked or paused webhook is re-snapshotted without an attempt (same progress, newer stamp).

/** Orders two snapshots of one webhook by rule 3 (without the offset tie-break). */
export const compareSnapshots = (a: Pick<Snapshot, 'progress' | 'updatedAtNs'>, b: Pick<Snapshot, 'progress' | 'updatedAtNs'>): number =>
  a.progress !== b.progress ? a.progress - b.progress : compareStamps(a.updatedAtNs, b.updatedAtNs);

export type StateRecord = { key: string | null; value: string | null };

export type FoldStats = { records: number; snapshots: number; tombstones: number; revived: number; superseded: number; skipped: number };

type KeyState = {
  /** The kept snapshot's raw value (parsed again at restore, to hold less in memory). */
  live: KeptSnapshot | null;
  /** Most progress of any snapshot seen so far (-1: none). */
  seenProgress: number;
};

/** What the fold keeps of a snapshot: its raw value, and the two fields rule 3 orders it by. */
type KeptSnapshot = { raw: string; progress: number; updatedAtNs: string };

/**
 * Folds howk.state records (each partition in offset order) into the live state per webhook,
 * through the compacted-table primitive (core/log/compacted-table.ts): a snapshot that does
 * not parse leaves its webhook as it was (rule 4).
 */
export const createStateFold = (log?: Logger) => {
  const stats: FoldStats = { records: 0, snapshots: 0, tombstones: 0, revived: 0, superseded: 0, skipped: 0 };
  const byKey = new CompactedTable<KeptSnapshot, KeyState>({
    topic: 'state',
    log,
    decode: (_key, value) => {
      const s = parseSnapshot(value);
      return { raw: value, progress: s.progress, updatedAtNs: s.updatedAtNs };
    },
    tombstone: (_key, k) => ({ live: null, seenProgress: k?.seenProgress ?? -1 }),
    merge: (_key, snap, k) => {
      if (!k) return { live: snap, seenProgress: snap.progress };
      if (k.live === null) {
        if (snap.progress > k.seenProgress) {
          k.live = snap;
          stats.revived++;
        } else stats.superseded++;
      } else if (compareSnapshots(snap, k.live) >= 0) {
        k.live = snap;
      } else stats.superseded++;
      k.seenProgress = Math.max(k.seenProgress, snap.progress);
      return k;
    },
  });

  const add = (rec: StateRecord): void => {
    stats.records++;
    if (rec.key === null) {
      stats.skipped++;
      return;
    }
    const applied = byKey.apply(rec.key, rec.value);
    if (applied === 'set') stats.snapshots++;
    else if (applied === 'deleted') stats.tombstones++;
    else stats.skipped++;
  };

  /** The webhooks still alive after every record so far, as parsed snapshots. */
  const live = (): Snapshot[] => {
    const out: Snapshot[] = [];
    for (const k of byKey.values()) if (k.live) out.push(parseSnapshot(k.live.raw));
    return out;
  };

  /** Most progress any snapshot of the webhook recorded (-1: none). */
  const seenProgress = (id: string): number => byKey.get(id)?.seenProgress ?? -1;

  return { add, live, seenProgress, stats, size: () => byKey.size };
};

export type StateFold = ReturnType<typeof createStateFold>;

/**
 * What a live snapshot restores: the status it recorded (completed from the webhook when
 * it recorded only the fields a hold changed) and the retry that resumes the webhook.
 */
export const restoreItemOf = (s: Snapshot): RestoreItem => {
  const w = s.webhook;
  const state: WebhookState = s.progress > 0 ? 'retrying' : 'pending';
  const status: WebhookStatus = {
    webhook_id: w.id,
    config_id: w.config_id,
    endpoint: w.endpoint,
    endpoint_hash: w.endpoint_hash,
    state,
    attempts: s.progress,
    max_attempts: w.max_attempts,
    created_at: w.created_at,
    last_attempt_at: null,
    last_status_code: null,
    last_error: null,
    next_retry_at: iso(s.dueAt),
    ...(w.replay_of ? { replay_of: w.replay_of } : {}),
    ...s.status,
    updated_at_ns: s.updatedAtNs,
  };
  return { status, retry: { id: w.id, dueAt: s.dueAt, data: s.data } };
};
