// What GET /webhooks, GET /webhooks/:id/status and GET /deadletter/:id answer (docs/API.md).

export const STATES = ['pending', 'retrying', 'delivered', 'failed', 'exhausted'] as const;

export type Row = {
  webhook_id: string;
  config_id: string;
  endpoint: string;
  state: (typeof STATES)[number];
  attempts: number;
  max_attempts: number;
  created_at: string;
  last_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  next_retry_at: string | null;
  dead_reason?: string | null;
  held?: string | null;
  replay_of?: string;
};

export type Attempt = { attempt: number; at: string; outcome: string; status_code: number | null; error: string | null; duration_ms: number };

export type Status = Row & { history: Attempt[] };

export type { DeadLetterView } from '../../core/http/routes/deadletter';
