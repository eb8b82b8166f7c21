import type { CircuitOutcome, CircuitParams, CircuitState } from '../policy/circuit';

// Admission control in front of every delivery attempt (DESIGN.md §5): pause, circuit
// breaker, rate limit, per-domain and per-endpoint in-flight limits, decided atomically
// (one Lua script on Redis) so that every worker sees the same counters.

export type GuardParams = {
  circuit: CircuitParams & { enabled: boolean };
  maxInflightPerEndpoint: number;
  maxInflightPerDomain: (host: string) => number;
  inflightTtlMs: number;
  rate: number;
  burst: number;
  circuitTtlMs: number;
};

export type AdmitRequest = {
  endpointHash: string;
  host: string;
  configId: string;
  lane: 'fast' | 'slow';
  now: number;
  /** Pause scopes whose drain released this webhook (holdPaused said 'released'): their pause is not checked. */
  passPause?: readonly PauseScope['kind'][];
};

export type Admission =
  /** Deliver now. `counted` says which in-flight counters were raised (to lower on completion). */
  | { kind: 'go'; probe: boolean; counted: { endpoint: boolean; domain: boolean } }
  /** Hold until `until` (open circuit, rate limit): no attempt spent. */
  | { kind: 'park'; reason: 'circuit_open' | 'rate_limited'; until: number }
  /** Fast lane is full for this endpoint or host: send to the slow lane. */
  | { kind: 'divert'; reason: 'endpoint_inflight' | 'domain_inflight' }
  /** Slow lane only: the endpoint is idle again, send it back to the fast lane. */
  | { kind: 'recovered' }
  /** Slow lane only: the host is at its limit; wait and ask again. */
  | { kind: 'wait' }
  | { kind: 'paused'; scope: 'endpoint' | 'config' };

export type Completion = {
  endpointHash: string;
  host: string;
  now: number;
  outcome: CircuitOutcome;
  probe: boolean;
  counted: { endpoint: boolean; domain: boolean };
  /** Short error text kept among the endpoint's last errors. */
  error?: string;
};

export type EndpointView = {
  endpoint_hash: string;
  circuit: { state: CircuitState; failures: number; open_until: number | null; successes: number; opened_count: number };
  inflight: number;
  paused: boolean;
  draining: boolean;
  parked_while_paused: number;
  last_errors: { at: string; error: string }[];
};

export type PauseScope = { kind: 'endpoint' | 'config'; id: string };

export type Guards = {
  admit(reqs: AdmitRequest[], p: GuardParams): Promise<Admission[]>;
  complete(done: Completion[], p: GuardParams): Promise<void>;
  endpoint(endpointHash: string, now: number): Promise<EndpointView>;
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
};

export type HoldResult = 'held' | 'gone' | 'released';
export type ResumeResult = 'drain' | 'running' | 'none';
export type TakeHeldResult = { kind: 'batch'; items: string[] } | { kind: 'paused' } | { kind: 'lost' } | { kind: 'done' };
