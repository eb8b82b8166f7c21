import { admitCircuit, closedCircuit, recordCircuit, type Circuit, type CircuitOutcome, type CircuitParams } from '../policy/circuit';
import { CompactedTable } from '../log/compacted-table';
import { decodeGuard, pauseKey, type OpenCircuit } from '../records/guard';
import type { Admission, PauseScope } from '../ports/guards';
import type { Logger } from '../ports/logger';

// What a worker knows of the guards without Redis (docs/RELIABILITY.md, "Redis unreachable:
// delivery degrades, it does not stop"): the circuits and pauses the last Redis answers and
// the guards topic told it, and its own deliveries in flight per endpoint and per host. While
// Redis does not answer, admission decides from this alone, within small per-worker bounds.

export type LocalBounds = { perEndpoint: number; perHost: number };

/** What a local admission decides: the same kinds as Redis's, minus those only Redis can keep. */
export type LocalAdmission = { kind: 'go'; probe: boolean } | { kind: 'wait' } | { kind: 'park'; until: number } | { kind: 'paused'; scope: PauseScope['kind'] };

/** Entries kept per map: the endpoints a worker delivers to recently, not every one it ever saw. */
const MAX_ENTRIES = 50_000;

const bounded = <V>(m: Map<string, V>, key: string, value: V): void => {
  m.delete(key); // newest last: the oldest goes first past the bound
  m.set(key, value);
  if (m.size > MAX_ENTRIES) m.delete(m.keys().next().value as string);
};

const bump = (m: Map<string, number>, key: string, by: number): void => {
  const n = (m.get(key) ?? 0) + by;
  if (n > 0) m.set(key, n);
  else m.delete(key);
};

/** `log`: where a malformed record of the guards topic is told (the table keeps that key's last good record). */
export const createLocalGuards = (bounds: LocalBounds, circuit: (CircuitParams & { enabled: boolean }) | undefined, log?: Logger) => {
  const circuits = new Map<string, Circuit>();
  /** The guards topic as its last good record of each key says: the pauses (pauseKey) and open circuits in force. */
  const topic = new CompactedTable<PauseScope | OpenCircuit>({ topic: 'guards', decode: decodeGuard, log });
  /** Scopes a Redis answer found paused, until a later answer lets a webhook of them go. */
  const seenPaused = new Set<string>();
  const running = new Map<string, { hash: string; host: string }>();
  const perEndpoint = new Map<string, number>();
  const perHost = new Map<string, number>();

  const circuitOf = (hash: string): Circuit => {
    let c = circuits.get(hash);
    if (!c) bounded(circuits, hash, (c = closedCircuit()));
    return c;
  };
  const isPaused = (s: PauseScope): boolean => {
    const k = pauseKey(s);
    return topic.has(k) || seenPaused.has(k);
  };

  /** A delivery of this worker starts (admitted by Redis or locally): counted until `ended`. */
  const started = (id: string, hash: string, host: string): void => {
    if (running.has(id)) return;
    running.set(id, { hash, host });
    bump(perEndpoint, hash, 1);
    bump(perHost, host, 1);
  };

  return {
    started,
    /** A record of the guards topic (key, value; null: a tombstone), read as every table of a compacted topic reads one. */
    applyRecord(key: string, value: string | null): void {
      if (topic.apply(key, value) === 'malformed') return;
      const row = topic.get(key);
      if (row && 'kind' in row) return; // a pause: isPaused reads the table
      if (!key.startsWith('circuit:')) return;
      const hash = key.slice('circuit:'.length);
      // An open circuit as recorded, or closed by its tombstone.
      bounded(circuits, hash, row ? { ...closedCircuit(), state: 'OPEN', open_until: row.openUntil, opened_count: row.openedCount } : closedCircuit());
    },

    /** What a Redis answer says of the webhook's endpoint and config. */
    learn(hash: string, configId: string, a: Admission, now: number): void {
      if (a.kind === 'paused') {
        seenPaused.add(pauseKey({ kind: a.scope, id: a.scope === 'endpoint' ? hash : configId }));
        return;
      }
      if (a.kind === 'park' && a.reason === 'circuit_open') {
        const c = circuitOf(hash);
        if (c.state !== 'OPEN' || c.open_until < a.until) bounded(circuits, hash, { ...c, state: 'OPEN', open_until: a.until });
        return;
      }
      if (a.kind !== 'go') return;
      // Let go: neither scope is paused (or its drain released the webhook) and the circuit admits.
      seenPaused.delete(pauseKey({ kind: 'endpoint', id: hash }));
      seenPaused.delete(pauseKey({ kind: 'config', id: configId }));
      if (a.probe) bounded(circuits, hash, { ...circuitOf(hash), state: 'HALF_OPEN', probe_at: now, successes: 0 });
      else if (circuitOf(hash).state !== 'CLOSED') bounded(circuits, hash, closedCircuit());
    },

    /** A delivery ended (once per `started`; later calls do nothing). */
    ended(id: string): void {
      const r = running.get(id);
      if (!r) return;
      running.delete(id);
      bump(perEndpoint, r.hash, -1);
      bump(perHost, r.host, -1);
    },

    /** An attempt's outcome, for the local circuit (Redis keeps its own). */
    outcome(hash: string, now: number, outcome: CircuitOutcome, probe: boolean): void {
      if (!circuit?.enabled || outcome === 'neutral') return;
      const c = circuitOf(hash);
      recordCircuit(c, now, outcome, probe, circuit);
    },

    /** Decides without Redis; a 'go' counts the delivery as started under `id`. `ceiling`: the endpoint's own concurrency ceiling, when lower. */
    admit(id: string, hash: string, host: string, configId: string, now: number, passPause: readonly PauseScope['kind'][] = [], ceiling?: number): LocalAdmission {
      if (!passPause.includes('endpoint') && isPaused({ kind: 'endpoint', id: hash })) return { kind: 'paused', scope: 'endpoint' };
      if (!passPause.includes('config') && isPaused({ kind: 'config', id: configId })) return { kind: 'paused', scope: 'config' };
      if ((perEndpoint.get(hash) ?? 0) >= Math.min(bounds.perEndpoint, ceiling ?? Infinity) || (perHost.get(host) ?? 0) >= bounds.perHost) return { kind: 'wait' };
      let probe = false;
      if (circuit?.enabled) {
        const c = circuits.get(hash);
        if (c && c.state !== 'CLOSED') {
          const ok = admitCircuit(c, now, circuit);
          if (!ok.allowed) return { kind: 'park', until: ok.until };
          probe = ok.probe;
        }
      }
      started(id, hash, host);
      return { kind: 'go', probe };
    },

    /** Deliveries of this worker in flight to the endpoint (for tests and the docs' figures). */
    inflight: (hash: string): number => perEndpoint.get(hash) ?? 0,
  };
};

export type LocalGuards = ReturnType<typeof createLocalGuards>;
