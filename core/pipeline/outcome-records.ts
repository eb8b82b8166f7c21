import { encodeDeadLetter, type DeadLetter } from '../records/dead-letter';
import { encodeResult } from '../records/result';
import { RESPONSE_SNIPPET_BYTES, type AttemptRecord, type WebhookState, type WebhookStatus } from '../domain/status';
import { iso } from '../domain/time';
import { encodeWebhook, type Webhook } from '../records/webhook';
import type { Decision } from '../policy/retry';
import type { DeliveryResponse } from '../ports/sender';
import { redactWebhook } from './redact';

// The records one delivery step leaves behind: result, status (+ history entry), dead
// letter, state snapshot. Pure functions of the step; deliver.ts collects them per batch.

/** The delivery script failed, or a ${VAR} template could not be resolved: nothing was sent. */
export type ScriptFailure = { kind: 'script' | 'secret' | 'credential' | 'endpoint'; error: string; durationMs: number };

export type Attempted = { webhook: Webhook; response: DeliveryResponse | ScriptFailure; at: number; decision: Decision };

export const responseError = (r: DeliveryResponse | ScriptFailure): string | null =>
  r.kind === 'response' ? (r.status >= 200 && r.status < 300 ? null : `HTTP ${r.status}`) : `${r.kind}: ${r.error}`;

const STATE: Record<Decision['kind'], WebhookState> = { delivered: 'delivered', retry: 'retrying', dead: 'failed' };

export const baseStatus = (
  w: Webhook,
  ns: string,
): Pick<WebhookStatus, 'webhook_id' | 'config_id' | 'endpoint' | 'endpoint_hash' | 'max_attempts' | 'created_at' | 'updated_at_ns' | 'replay_of'> => {
  const s: Pick<WebhookStatus, 'webhook_id' | 'config_id' | 'endpoint' | 'endpoint_hash' | 'max_attempts' | 'created_at' | 'updated_at_ns' | 'replay_of'> = {
    webhook_id: w.id,
    config_id: w.config_id,
    endpoint: w.endpoint,
    endpoint_hash: w.endpoint_hash,
    max_attempts: w.max_attempts,
    created_at: w.created_at,
    updated_at_ns: ns,
  };
  if (w.replay_of) s.replay_of = w.replay_of;
  return s;
};

/** ISO text of a ms time; the last one is kept: a batch's outcomes share few distinct ms, and each needs it three times. */
let lastIsoMs = NaN;
let lastIso = '';
const isoOf = (ms: number): string => (ms === lastIsoMs ? lastIso : ((lastIsoMs = ms), (lastIso = iso(ms))));

// Built as literals with optional fields set afterwards, in the order the spreads gave them:
// object spreads of temporaries cost an allocation and a copy each, once per delivery.
/** `result`: the howk.results record (JSON text); `status` and `attempt`: the status and history entry. */
export const attemptRecords = (o: Attempted, ns: string) => {
  const { webhook: w, response: r, decision } = o;
  const status_code = r.kind === 'response' ? r.status : null;
  const error = responseError(r);
  const next_retry_at = decision.kind === 'retry' ? iso(decision.dueAt) : null;
  const outcome: AttemptRecord['outcome'] =
    decision.kind === 'delivered' ? 'delivered' : decision.kind === 'retry' ? (decision.deferred ? 'deferred' : 'retry') : decision.reason_type;
  const at = isoOf(o.at);
  const result = encodeResult(w, outcome, decision.kind === 'delivered', status_code, error, r.durationMs, next_retry_at, at);
  const attempts = w.attempt + w.deferrals + 1;
  const status = baseStatus(w, ns) as WebhookStatus;
  status.state = decision.kind === 'dead' && decision.reason_type === 'exhausted' ? 'exhausted' : STATE[decision.kind];
  status.attempts = attempts;
  status.last_attempt_at = at;
  status.last_status_code = status_code;
  status.last_error = error;
  status.next_retry_at = next_retry_at;
  status.held = null;
  if (decision.kind === 'dead') status.dead_reason = decision.reason_type;
  const attempt: AttemptRecord = {
    attempt: attempts,
    at,
    outcome,
    status_code,
    error,
    duration_ms: r.durationMs,
    next_retry_at,
    deferrals: decision.kind === 'retry' ? decision.next.deferrals : w.deferrals,
  };
  if (r.kind === 'response') {
    if (r.retryAfter) attempt.retry_after = r.retryAfter;
    if (r.bodySnippet) attempt.response = r.bodySnippet.slice(0, RESPONSE_SNIPPET_BYTES);
    if (r.signed) attempt.signed = r.signed;
  }
  return { result, status, attempt };
};

export const deadLetterValue = (o: Attempted, reason_type: DeadLetter['reason_type'], reason: string): string => {
  const r = o.response;
  return encodeDeadLetter(
    {
      webhook_id: o.webhook.id,
      config_id: o.webhook.config_id,
      reason,
      reason_type,
      last_status_code: r.kind === 'response' ? r.status : null,
      last_error: responseError(r),
      last_response: r.kind === 'response' ? r.bodySnippet.slice(0, 1024) : null,
      dead_at: iso(o.at),
    },
    // The webhook is spliced in raw so that a replay sends the original bytes.
    encodeWebhook(redactWebhook(o.webhook)),
  );
};

/** The history entry of a hold (open circuit, rate limit): no attempt spent, the next try at `until`. */
export const heldEntry = (w: Webhook, at: number, reason: 'circuit_open' | 'rate_limited' | 'paused', until: number): AttemptRecord => ({
  attempt: w.attempt + w.deferrals,
  at: iso(at),
  outcome: 'held',
  status_code: null,
  error: null,
  duration_ms: 0,
  next_retry_at: iso(until),
  deferrals: w.deferrals,
  held: reason,
});
