// What the Worker and a DomainGate say to each other (JSON over the stub's fetch).
//
// /admit   single-host requests: the gate dedupes, admits and produces (micro-batched),
//          and answers once Kafka acknowledged.
// /reserve then /settle   requests spanning several hosts: each gate dedupes and admits
//          without producing; the Worker produces everything in one call, then tells each
//          gate whether it worked, so that the request is accepted or refused whole.

export type AdmitItem = { webhook_id: string; endpoint_hash?: string; idempotency_key?: string; /** the encoded webhook record */ value: string };
export type GateAdmitRequest = { config_id: string; host: string; items: AdmitItem[] };

/** pending: the fast lane; slow: howk.slow; parked: in the retry schedule (open circuit). */
export type GateRoute = 'pending' | 'slow' | 'parked';
export type RouteChoice = { route: GateRoute; /** parked: when the circuit lets it go */ until?: number };
export type AdmitResult = {
  webhook_id: string;
  status: 'pending' | 'duplicate';
  route?: GateRoute;
  /** The route as a gate of the previous release names it (read while a deploy restarts the gates). */
  lane?: GateRoute;
  until?: number;
};
export type AdmitReply = { results: AdmitResult[] };
export type ReserveReply = { reservation: string; results: AdmitResult[] };
export type SettleRequest = { reservation: string; ok: boolean };

/** An API key's request against its shared bucket (api.auth.rate_limit / rate_burst). */
export type RateRequest = { rate: number; burst: number };
export type RateReply = { ok: true } | { ok: false; retry_after: number };

export type GateError = { error: { code: string; message: string; retry_after?: number } };

export type GateStats = {
  idempotency_keys: number;
  flushes: number;
  flushed_records: number;
  produce_failures: number;
  admitted: Record<GateRoute, number>;
  duplicates: number;
  buffered: number;
  reservations: number;
  alarm_at: number | null;
  /** Capacity reads from Redis, and those that failed. */
  capacity_reads: number;
  capacity_failures: number;
  /** Fast-lane bucket levels by scope (domain:<host>, endpoint:<hash>, host:<host>). */
  buckets: Record<string, number>;
  /** What the gate adds to an admitted request besides its produce (linger, queueing, storage), ms. */
  added_ms: { count: number; p50: number | null; p99: number | null };
  produce_ms: { count: number; p50: number | null; p99: number | null };
};

export const GATE_ORIGIN = 'https://domain-gate.internal';
