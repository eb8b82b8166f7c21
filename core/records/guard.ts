import { iso } from '../domain/time';
import type { CircuitTransition, PauseScope } from '../policy/guard-types';

// The record of howk.guards (compacted, one partition). Key: the scope, `pause:<kind>:<id>`
// or `circuit:<endpoint hash>`. Value: a pause while it lasts, an open circuit while it stays
// open. Tombstone: a resume, a closed (or reset) circuit; so the compacted topic holds exactly
// the pauses and open circuits in force (docs/RELIABILITY.md). Read back by `decodeGuard`.

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

const isScopeKind = (k: unknown): k is PauseScope['kind'] => k === 'endpoint' || k === 'config';

/** What a record stands for; undefined when it is not a guard record, or not the one of its key. */
export const decodeGuard = (key: string, value: string): PauseScope | OpenCircuit | undefined => {
  const v = JSON.parse(value) as Record<string, unknown> | null;
  if (v?.type === 'pause' && isScopeKind(v.scope) && typeof v.id === 'string' && v.id) {
    const s: PauseScope = { kind: v.scope, id: v.id };
    return pauseKey(s) === key ? s : undefined;
  }
  if (v?.type === 'circuit' && typeof v.endpoint_hash === 'string' && typeof v.open_until === 'number' && typeof v.at === 'number') {
    if (circuitKey(v.endpoint_hash) !== key) return undefined;
    return { endpointHash: v.endpoint_hash, openUntil: v.open_until, openedCount: typeof v.opened_count === 'number' ? v.opened_count : 1, at: v.at };
  }
  return undefined;
};
