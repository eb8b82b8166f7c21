// What the Worker and a DomainGate say to each other (JSON over the stub's fetch).
//
// /admit   single-host requests: the gate dedupes, admits and produces (micro-batched),
//          and answers once Kafka acknowledged.
// /reserve then /settle   requests spanning several hosts: each gate dedupes and admits
//          without producing; the Worker produces everything in one call, then tells each
//          gate whether it worked, so that the request is accepted or refused whole.

export type AdmitItem = { webhook_id: string; idempotency_key?: string; /** the encoded webhook record */ value: string };
export type AdmitRequest = { config_id: string; host: string; items: AdmitItem[] };

export type Lane = 'pending' | 'slow';
export type AdmitResult = { webhook_id: string; status: 'pending' | 'duplicate'; lane?: Lane };
export type AdmitReply = { results: AdmitResult[] };
export type ReserveReply = { reservation: string; results: AdmitResult[] };
export type SettleRequest = { reservation: string; ok: boolean };

export type GateError = { error: { code: string; message: string; retry_after?: number } };

export type GateStats = {
  idempotency_keys: number;
  flushes: number;
  flushed_records: number;
  produce_failures: number;
  admitted: Record<Lane, number>;
  duplicates: number;
  buffered: number;
  reservations: number;
  alarm_at: number | null;
  /** What the gate adds to an admitted request besides its produce (linger, queueing, storage), ms. */
  added_ms: { count: number; p50: number | null; p99: number | null };
  produce_ms: { count: number; p50: number | null; p99: number | null };
};

export const GATE_ORIGIN = 'https://domain-gate.internal';
