import type { WebhookStatus } from '../../core/domain/status';
import { encodeWebhook, type Webhook } from '../../core/records/webhook';
import { snapshotValue } from '../../core/records/state';

// Builders shared by the reconciler's unit, contract and integration tests.

export const T0 = Date.UTC(2026, 0, 15, 12, 0, 0);

/** A 19-digit updated_at_ns from a ms time plus a sub-ms sequence. */
export const stamp = (ms: number, seq = 0): string => `${ms}${String(seq).padStart(6, '0')}`;

export const hook = (id: string, patch: Partial<Webhook> = {}): Webhook => ({
  id,
  config_id: 'cfg_r',
  endpoint: 'https://example.com/hook',
  endpoint_hash: 'ab'.repeat(16),
  payload: '{"n": 1.0, "big": 12345678901234567890}',
  headers: { 'x-trace': 't1' },
  attempt: 1,
  max_attempts: 5,
  deferrals: 0,
  created_at: new Date(T0).toISOString(),
  scheduled_at: new Date(T0).toISOString(),
  ...patch,
});

export const statusFor = (w: Webhook, ns: string, patch: Partial<WebhookStatus> = {}): WebhookStatus => ({
  webhook_id: w.id,
  config_id: w.config_id,
  endpoint: w.endpoint,
  endpoint_hash: w.endpoint_hash,
  state: 'retrying',
  attempts: w.attempt + w.deferrals,
  max_attempts: w.max_attempts,
  created_at: w.created_at,
  last_attempt_at: new Date(T0).toISOString(),
  last_status_code: 503,
  last_error: 'HTTP 503',
  next_retry_at: new Date(T0 + 1000).toISOString(),
  updated_at_ns: ns,
  ...patch,
});

/** The howk.state record a worker writes when it schedules `w` (the next attempt) at `dueAt`. */
export const snapshot = (w: Webhook, ns: string, dueAt = T0 + 1000): { key: string; value: string } => ({
  key: w.id,
  value: snapshotValue(w, statusFor(w, ns), dueAt),
});

export const tombstone = (id: string): { key: string; value: null } => ({ key: id, value: null });

/** A dead-letter record as core/pipeline/outcome-records.ts writes it. */
export const deadLetter = (w: Webhook, deadAtMs: number, reason_type = 'exhausted', extra: Record<string, unknown> = {}): string => {
  const head = JSON.stringify({
    webhook_id: w.id,
    config_id: w.config_id,
    reason: reason_type === 'exhausted' ? `all ${w.max_attempts} attempts failed` : 'the endpoint refused the webhook',
    reason_type,
    last_status_code: reason_type === 'exhausted' ? 503 : 400,
    last_error: reason_type === 'exhausted' ? 'HTTP 503' : 'HTTP 400',
    last_response: 'nope',
    dead_at: new Date(deadAtMs).toISOString(),
    ...extra,
  });
  return `${head.slice(0, -1)},"webhook":${encodeWebhook(w)}}`;
};
