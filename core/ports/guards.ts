import type { Lane } from '../domain/webhook';
import type { LimitSample } from '../policy/adaptive-limit';
import type { CircuitOutcome, CircuitState } from '../policy/circuit';
import type { CircuitTransition, ConcurrencyView, GuardParams, PauseScope } from '../policy/guard-types';

// Admission control in front of every delivery attempt (docs/ARCHITECTURE.md, Protection):
// pause, circuit breaker, rate limit, per-domain and per-endpoint in-flight limits, decided
// atomically (one Lua script on Redis) so that every worker sees the same counters.
//
// In flight is counted in leases, not counters: each admitted delivery holds one lease per
// limit (member: its webhook id) that ends with its completion or, if the completion never
// comes (a worker killed with -9), on its own `inflightLeaseMs` after the admission. The
// worker renews the leases of its deliveries that run longer (`renew`).

export type { CircuitTransition, ConcurrencyView, GuardParams, PauseScope } from '../policy/guard-types';

export type AdmitRequest = {
  endpointHash: string;
  host: string;
  configId: string;
  lane: Lane;
  now: number;
  /** Pause scopes whose drain released this webhook (holdPaused said 'released'): their pause is not checked. */
  passPause?: readonly PauseScope['kind'][];
  /** The webhook's id: its in-flight lease on a 'go', its place among the queued on a 'wait'. */
  id: string;
  /** Whether it was told to wait before (it is counted as queued until it is not). */
  waited?: boolean;
  /** The endpoint's own concurrency ceiling (a Svix endpoint's maxConcurrency): its in-flight deliveries, in either lane, never above it. */
  ceiling?: number;
  /**
   * A copy that another worker may still be sending (consumed again after its partition
   * moved): while its id holds a lease in force, it is answered 'elsewhere', not let go.
   */
  copy?: boolean;
};

/** What admission knew of the endpoint's adaptive limit when it let a delivery go. */
export type LimitSeen = { fastLimit: number; limit: number; latencyMs: number };

export type Admission =
  /** Deliver now. `counted` says which in-flight leases were taken (to end on completion). */
  | { kind: 'go'; probe: boolean; counted: { endpoint: boolean; domain: boolean }; seen?: LimitSeen }
  /** Hold until `until` (open circuit, rate limit; a pause met while Redis is away): no attempt spent. */
  | { kind: 'park'; reason: 'circuit_open' | 'rate_limited' | 'paused'; until: number }
  /** The endpoint is slow and at its limit (or its host's): send to the slow lane. */
  | { kind: 'divert'; reason: 'endpoint_inflight' | 'domain_inflight' }
  /** Slow lane only: the endpoint is no longer slow, send it back to the fast lane. */
  | { kind: 'recovered' }
  /** At the limit but not slow (fast lane), or the host at its limit (slow lane): wait and ask again. */
  | { kind: 'wait' }
  | { kind: 'paused'; scope: 'endpoint' | 'config' }
  /** A copy (AdmitRequest.copy) whose id holds an in-flight lease until `until`: its delivery is on its way elsewhere. */
  | { kind: 'elsewhere'; until: number };

export type Completion = {
  /** The webhook id the admission took its leases under. */
  id: string;
  endpointHash: string;
  host: string;
  now: number;
  outcome: CircuitOutcome;
  probe: boolean;
  counted: { endpoint: boolean; domain: boolean };
  /** Short error text kept among the endpoint's last errors. */
  error?: string;
  /** What the attempt tells the adaptive limit (none: nothing reached the endpoint). */
  sample?: LimitSample;
};

/** A delivery still running whose leases (those `counted`) its worker keeps alive. */
export type InflightLease = { id: string; endpointHash: string; host: string; counted: { endpoint: boolean; domain: boolean } };

export type EndpointView = {
  endpoint_hash: string;
  circuit: { state: CircuitState; failures: number; open_until: number | null; successes: number; opened_count: number };
  inflight: number;
  paused: boolean;
  draining: boolean;
  parked_while_paused: number;
  last_errors: { at: string; error: string }[];
  concurrency: ConcurrencyView;
};

/** An open circuit as a rebuild restores it (from its last transition on howk.guards), for what is left of its TTL. */
export type CircuitRestore = { endpointHash: string; openUntil: number; openedCount: number; ttlMs: number };

/** A held webhook as a rebuild puts it back behind its pause: its id and its encoded record. */
export type HeldRestore = { id: string; data: string };

/** What a rebuild writes back (core/reconcile/guard-replay.ts): a live value is never replaced. */
export type GuardRestore = {
  /** Pauses the scopes that have no pause value (a live pause or drain stays as it is). Returns how many were set. */
  restorePauses(scopes: PauseScope[]): Promise<number>;
  /** Opens the circuits that are not open or half-open already (a live one of those stays as it is). Returns how many were set. */
  restoreCircuits(items: CircuitRestore[]): Promise<number>;
  /**
   * Appends webhooks to a paused (or draining) scope's held queue, in the given order, each
   * only if the queue does not hold the same record already. Returns how many were appended,
   * or null when the scope is not paused (the caller schedules them instead).
   */
  restoreHeld(scope: PauseScope, items: HeldRestore[]): Promise<number | null>;
};

export type Guards = GuardRestore & {
  admit(reqs: AdmitRequest[], p: GuardParams): Promise<Admission[]>;
  /** Records the completions; returns the circuit transitions they caused, in order. */
  complete(done: Completion[], p: GuardParams): Promise<CircuitTransition[]>;
  /** Moves the end of these deliveries' leases to now + inflightLeaseMs; a lease already ended (completed, or dropped once it ran out) stays ended. */
  renew(leases: InflightLease[], now: number, p: GuardParams): Promise<void>;
  endpoint(endpointHash: string, now: number, p: GuardParams): Promise<EndpointView>;
  resetCircuit(endpointHash: string): Promise<void>;
  /** Pauses the scope (again); a drain in progress keeps its lease and stops at its next step. */
  pause(scope: PauseScope): Promise<void>;
  /**
   * Holds a webhook that met a pause. 'gone': the scope is no longer paused (resumed and fully
   * drained meanwhile): ask again. 'released': the scope is draining and `releasedBy` names its
   * drain (the webhook is one the drain moved): deliver it past this pause.
   */
  holdPaused(scope: PauseScope, data: string, releasedBy?: readonly string[]): Promise<HoldResult>;
  /**
   * Starts a resume: the scope drains (new arrivals still queue behind the held ones).
   * 'drain': the caller owns the drain as `drain` (a lease of `leaseMs`, renewed by takeHeld);
   * 'running': another drain owns a live lease and carries on; 'none': not paused.
   */
  resume(scope: PauseScope, drain: string, now: number, leaseMs: number): Promise<ResumeResult>;
  /** Up to `limit` held webhooks in arrival order, without removing them. */
  peekHeld(scope: PauseScope, limit: number): Promise<string[]>;
  /**
   * The next held webhooks of the drain `drain`, without removing them: 'paused' (a pause came
   * back: the drain gives up its lease and stops), 'lost' (another drain took the lease over),
   * 'done' (nothing left: the pause ended), or a batch to produce, then dropHeld.
   */
  takeHeld(scope: PauseScope, drain: string, limit: number, now: number, leaseMs: number): Promise<TakeHeldResult>;
  /** Drops the first `n` webhooks the drain `drain` produced. Returns how many remain, -1 when the drain no longer owns the scope (nothing dropped). */
  dropHeld(scope: PauseScope, drain: string, n: number): Promise<number>;
  /**
   * Endpoints whose circuit is not closed (open, or half-open and probing) and the endpoint
   * in-flight leases in force at `now`, for the console's gauges. null: the store could not
   * count them within its bound (workers/redis/guard-gauges.ts).
   */
  gauges?(now: number): Promise<GuardGauges | null>;
  /**
   * Takes a token from the bucket of one owner of an endpoint (a Svix endpoint's throttleRate:
   * `rate` per second, at most `burst` saved up). 0: taken, send now; else ms until one is there.
   */
  takeToken?(endpointHash: string, owner: string, rate: number, burst: number, now: number): Promise<number>;
};

export type GuardGauges = { openCircuits: number; inflight: number };

export type HoldResult = 'held' | 'gone' | 'released';
export type ResumeResult = 'drain' | 'running' | 'none';
export type TakeHeldResult = { kind: 'batch'; items: string[] } | { kind: 'paused' } | { kind: 'lost' } | { kind: 'done' };

/**
 * Every call of `inner` passed through unchanged: the base of a wrapper that adds to a few
 * of them (`{ ...forwardGuards(inner), admit: ... }`). `gauges` is not forwarded: the console's
 * gauges are read from the store's own guards (workers/node/gauges.ts).
 */
export const forwardGuards = (inner: Guards): Guards => ({
  admit: (reqs, p) => inner.admit(reqs, p),
  complete: (done, p) => inner.complete(done, p),
  renew: (leases, now, p) => inner.renew(leases, now, p),
  endpoint: (hash, now, p) => inner.endpoint(hash, now, p),
  resetCircuit: (hash) => inner.resetCircuit(hash),
  pause: (scope) => inner.pause(scope),
  resume: (scope, drain, now, leaseMs) => inner.resume(scope, drain, now, leaseMs),
  holdPaused: (scope, data, releasedBy) => inner.holdPaused(scope, data, releasedBy),
  peekHeld: (scope, limit) => inner.peekHeld(scope, limit),
  takeHeld: (scope, drain, limit, now, leaseMs) => inner.takeHeld(scope, drain, limit, now, leaseMs),
  dropHeld: (scope, drain, n) => inner.dropHeld(scope, drain, n),
  restorePauses: (scopes) => inner.restorePauses(scopes),
  restoreCircuits: (items) => inner.restoreCircuits(items),
  restoreHeld: (scope, items) => inner.restoreHeld(scope, items),
  ...(inner.takeToken && { takeToken: inner.takeToken.bind(inner) }),
});
