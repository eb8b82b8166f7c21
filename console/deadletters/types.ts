import type { ReplayJobView } from '../../core/reconcile/replay-jobs';

// What GET /deadletter and the bulk replay routes answer (docs/API.md).

export const REASONS = [
  'exhausted',
  'unrecoverable',
  'invalid_record',
  'blocked_destination',
  'invalid_request',
  'invalid_secret',
  'script_not_found',
  'script_syntax_error',
  'script_runtime_error',
  'script_timeout',
  'script_memory_limit',
  'secret_not_allowed',
  'secret_missing',
  'secret_host_not_allowed',
  'credential_host_not_allowed',
] as const;

export type DeadRow = {
  webhook_id: string;
  config_id: string;
  reason: string;
  reason_type: string;
  last_status_code: number | null;
  last_error: string | null;
  dead_at: string;
  webhook: { endpoint?: string; attempt?: number; max_attempts?: number; replay_of?: string; payload_bytes?: number };
};

export type DeadPage = { items: DeadRow[]; count: number; next_cursor: string | null };

/** A bulk replay job as GET /deadletter/replay/:job answers it (the server's own type). */
export type Job = ReplayJobView;
