import { CompactedTable } from '../log/compacted-table';
import type { Logger } from '../ports/logger';
import { decodeGuard, pauseKey, type OpenCircuit } from '../records/guard';
import type { GuardRestore, PauseScope } from '../ports/guards';
import type { RebuildState } from '../ports/hot-state';
import type { RestoreItem, TopicReader } from '../ports/recovery';
import { compareStamps, type Snapshot } from '../records/state';
import { restoreItemOf } from './replay';

// The guard part of a rebuild (docs/RELIABILITY.md, Pauses and circuits): howk.guards gives
// back the pauses and open circuits in force, and the webhooks a pause held (their howk.state
// snapshots say `paused`) go back into the held queue of a scope still paused, in the order
// they were held, instead of into the retry schedule (which would deliver them).

export type GuardSummary = { records: number; pauses: number; circuits: number; expired: number; skipped: number; held: number; idled: number[] };

export type GuardReplayDeps = {
  reader: TopicReader;
  guards: GuardRestore;
  topic: string;
  idleTimeoutMs: number;
  /** ttl.circuit_state_ttl: a circuit recorded longer ago than this had expired in Redis too. */
  circuitTtlMs: number;
  now: () => number;
  log?: Logger;
};

export type GuardTable = { pauses: PauseScope[]; circuits: OpenCircuit[]; skipped: number };

/**
 * Folds howk.guards records (in offset order: one partition) into the pauses and open circuits
 * in force. A malformed record leaves its scope as it was (core/log/compacted-table.ts).
 */
export const createGuardFold = (log?: Logger) => {
  const rows = new CompactedTable({ topic: 'guards', decode: decodeGuard, log });
  return {
    add: (r: { key: string | null; value: string | null }): void => {
      if (r.key !== null) rows.apply(r.key, r.value);
    },
    table: (): GuardTable => {
      const t: GuardTable = { pauses: [], circuits: [], skipped: rows.malformed };
      for (const x of rows.values()) {
        if ('kind' in x) t.pauses.push(x);
        else t.circuits.push(x);
      }
      return t;
    },
  };
};

/** Restores the pauses and open circuits; returns the scopes paused on howk.guards (by pauseKey). */
export const replayGuards = async (d: GuardReplayDeps): Promise<{ paused: Set<string>; summary: GuardSummary }> => {
  const fold = createGuardFold(d.log);
  let records = 0;
  const read = await d.reader.readToEnd(
    d.topic,
    async (b) => {
      records += b.records.length;
      b.records.forEach(fold.add);
    },
    { idleTimeoutMs: d.idleTimeoutMs },
  );
  const t = fold.table();
  const pauses = await d.guards.restorePauses(t.pauses);
  const now = d.now();
  const live = t.circuits.filter((c) => c.at + d.circuitTtlMs > now);
  const circuits = await d.guards.restoreCircuits(
    live.map((c) => ({ endpointHash: c.endpointHash, openUntil: c.openUntil, openedCount: c.openedCount, ttlMs: c.at + d.circuitTtlMs - now })),
  );
  return {
    paused: new Set(t.pauses.map(pauseKey)),
    summary: { records, pauses, circuits, expired: t.circuits.length - live.length, skipped: t.skipped, held: 0, idled: read.idled },
  };
};

/** The pause a held snapshot goes back behind: its endpoint's, else its config's (admission's order), when still paused. */
export const heldScopeOf = (s: Snapshot, paused: ReadonlySet<string>): PauseScope | null => {
  if (s.kind !== 'paused') return null;
  const endpoint: PauseScope = { kind: 'endpoint', id: s.webhook.endpoint_hash };
  if (paused.has(pauseKey(endpoint))) return endpoint;
  const config: PauseScope = { kind: 'config', id: s.webhook.config_id };
  return paused.has(pauseKey(config)) ? config : null;
};

/** Splits live snapshots into those held by a pause still in force (per scope) and the rest. */
export const splitHeld = (live: Snapshot[], paused: ReadonlySet<string>): { held: Map<string, { scope: PauseScope; snaps: Snapshot[] }>; rest: Snapshot[] } => {
  const held = new Map<string, { scope: PauseScope; snaps: Snapshot[] }>();
  const rest: Snapshot[] = [];
  for (const s of live) {
    const scope = heldScopeOf(s, paused);
    if (!scope) {
      rest.push(s);
      continue;
    }
    const k = pauseKey(scope);
    const g = held.get(k) ?? { scope, snaps: [] };
    held.set(k, g);
    g.snaps.push(s);
  }
  // In the order they were held (a hold's stamp), as the queue had them.
  for (const g of held.values()) g.snaps.sort((a, b) => compareStamps(a.updatedAtNs, b.updatedAtNs) || (a.webhookId < b.webhookId ? -1 : a.webhookId > b.webhookId ? 1 : 0));
  return { held, rest };
};

/**
 * Puts held webhooks back behind their pause, a batch at a time: their status first (as any
 * restore), then the queue. Where the scope is no longer paused in Redis (resumed and drained
 * while the rebuild ran), `schedule` restores them for delivery. Returns [statuses written, held].
 */
export const restoreHeld = async (
  guards: GuardRestore,
  hot: RebuildState,
  groups: Iterable<{ scope: PauseScope; snaps: Snapshot[] }>,
  batch: number,
  schedule: (snaps: Snapshot[]) => Promise<number>,
): Promise<[number, number]> => {
  let restored = 0;
  let held = 0;
  for (const { scope, snaps } of groups) {
    for (let i = 0; i < snaps.length; i += batch) {
      const c = snaps.slice(i, i + batch);
      const n = await guards.restoreHeld(
        scope,
        c.map((s) => ({ id: s.webhookId, data: s.data })),
      );
      if (n === null) {
        restored += await schedule(c);
        continue;
      }
      held += n;
      restored += await hot.restore(c.map((s): RestoreItem => ({ status: restoreItemOf(s).status })));
    }
  }
  return [restored, held];
};
