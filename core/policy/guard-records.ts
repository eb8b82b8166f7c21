import type { CircuitTransition, PauseScope } from './guard-types';
import { iso } from '../domain/time';

// The records of howk.guards (compacted, key = the scope): a pause while it lasts and an open
// circuit while it stays open. A resume and a closed (or reset) circuit are tombstones, so the
// compacted topic holds exactly the pauses and open circuits in force (docs/RELIABILITY.md).

export type GuardRecord = { key: string; value: string | null };

/** An open circuit as its last transition recorded it. */
export type OpenCircuit = { endpointHash: string; openUntil: number; openedCount: number; at: number };

export const pauseKey = (s: PauseScope): string => `pause:${s.kind}:${s.id}`;
export const circuitKey = (endpointHash: string): string => `circuit:${endpointHash}`;

export const pauseRecord = (s: PauseScope, at: number): GuardRecord => ({ key: pauseKey(s), value: JSON.stringify({ type: 'pause', scope: s.kind, id: s.id, at: iso(at) }) });

export const resumeRecord = (s: PauseScope): GuardRecord => ({ key: pauseKey(s), value: null });

export const circuitRecord = (t: CircuitTransition): GuardRecord => ({
  key: circuitKey(t.endpointHash),
  value:
    t.state === 'CLOSED' ? null : JSON.stringify({ type: 'circuit', endpoint_hash: t.endpointHash, state: 'OPEN', open_until: t.openUntil, opened_count: t.openedCount, at: t.at }),
});

export const resetCircuitRecord = (endpointHash: string): GuardRecord => ({ key: circuitKey(endpointHash), value: null });

export type GuardTable = { pauses: PauseScope[]; circuits: OpenCircuit[]; skipped: number };

const isScopeKind = (k: unknown): k is PauseScope['kind'] => k === 'endpoint' || k === 'config';

/** What a record stands for, null when it does not parse (skipped and counted, as on howk.state). */
const parse = (value: string): PauseScope | OpenCircuit | null => {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(value) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (v.type === 'pause' && isScopeKind(v.scope) && typeof v.id === 'string' && v.id) return { kind: v.scope, id: v.id };
  if (v.type === 'circuit' && typeof v.endpoint_hash === 'string' && typeof v.open_until === 'number' && typeof v.at === 'number') {
    return { endpointHash: v.endpoint_hash, openUntil: v.open_until, openedCount: typeof v.opened_count === 'number' ? v.opened_count : 1, at: v.at };
  }
  return null;
};

/** Folds howk.guards records (in offset order: one partition) into the pauses and open circuits in force. */
export const createGuardFold = () => {
  const last = new Map<string, string | null>();
  return {
    add: (r: { key: string | null; value: string | null }): void => {
      if (r.key !== null) last.set(r.key, r.value);
    },
    table: (): GuardTable => {
      const t: GuardTable = { pauses: [], circuits: [], skipped: 0 };
      for (const value of last.values()) {
        if (value === null) continue;
        const x = parse(value);
        if (!x) t.skipped++;
        else if ('kind' in x) t.pauses.push(x);
        else t.circuits.push(x);
      }
      return t;
    },
  };
};
