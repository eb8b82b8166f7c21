import type { LimitParams } from './adaptive-limit';
import type { CircuitParams } from './circuit';

// The guards' parameters and the shapes the guard policies compute (concurrency-view.ts,
// core/records/guard.ts). Policy types, so the policies need nothing from core/ports; the Guards
// port (core/ports/guards.ts) re-exports them for its adapters.

export type GuardParams = {
  circuit: CircuitParams & { enabled: boolean };
  /** An endpoint's share of the fast lane, under its adaptive limit (0 = no endpoint limit, no measurement). */
  maxInflightPerEndpoint: number;
  /** Ceiling of a host's adaptive limit (0 = no domain limit). */
  maxInflightPerDomain: (host: string) => number;
  /** The adaptive limits (core/policy/adaptive-limit.ts); `ceiling` is the endpoint's, a host's is its domain limit. */
  limits: LimitParams;
  /** How long an in-flight lease lasts unless its worker renews it (concurrency.inflight_ttl). */
  inflightLeaseMs: number;
  rate: number;
  burst: number;
  circuitTtlMs: number;
  /**
   * Admit nothing (every request waits) while the hot state has no canary: Redis was lost and
   * is not rebuilt yet, so its pauses and circuits are not there to be read. Only where a
   * reconciler sets the canary (reconciler.enabled).
   */
  requireCanary?: boolean;
};

export type ConcurrencyView = {
  /** The endpoint's adaptive limit (what the slow lane paces by) and its fast-lane share of it. */
  limit: number;
  fast_lane_limit: number;
  latency_ms: { estimate: number | null; min: number | null; p50: number | null; p90: number | null; samples: number };
  inflight: number;
  /** Webhooks told to wait at the limit within the last 2 s (in any worker). */
  queued: number;
  slow: boolean;
  slow_reason: 'latency' | 'timeouts' | null;
};

export type PauseScope = { kind: 'endpoint' | 'config'; id: string };

/**
 * A completion that moved a circuit: opened (failures, or a failed probe) or closed (the
 * probes succeeded). What howk.guards records, so that a rebuild brings the circuit back.
 */
export type CircuitTransition = { endpointHash: string; state: 'OPEN' | 'CLOSED'; at: number; openUntil: number; openedCount: number };
