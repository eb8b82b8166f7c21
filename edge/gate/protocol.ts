// What the Worker and a DomainGate say to each other (JSON over the stub's fetch).

export type AdmitItem = { webhook_id: string; idempotency_key?: string; /** the encoded webhook record */ value: string };
export type AdmitRequest = { config_id: string; host: string; items: AdmitItem[] };

export type Lane = 'pending' | 'slow';
export type AdmitResult = { webhook_id: string; status: 'pending' | 'duplicate'; lane?: Lane };
export type AdmitReply = { results: AdmitResult[] };

export type GateError = { error: { code: string; message: string; retry_after?: number } };

export type GateStats = {
  idempotency_keys: number;
  flushes: number;
  flushed_records: number;
  produce_failures: number;
  admitted: Record<Lane, number>;
  duplicates: number;
  buffered: number;
  alarm_at: number | null;
};

export const GATE_ORIGIN = 'https://domain-gate.internal';
