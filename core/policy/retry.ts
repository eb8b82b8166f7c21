import type { ScriptReason } from '../domain/status';
import type { Webhook } from '../domain/webhook';
import type { Classification } from './classify';

export type RetryPolicy = {
  base_delay: number;
  max_delay: number;
  jitter: number;
  max_deferrals: number;
  max_retry_after: number;
};

/** base_delay * 2^min(attempt,10), capped at max_delay, spread by ±jitter. `rand` in [0,1). */
export const backoffDelay = (attempt: number, p: RetryPolicy, rand: number): number => {
  const raw = Math.min(p.base_delay * 2 ** Math.min(attempt, 10), p.max_delay);
  const spread = raw * p.jitter * (rand * 2 - 1);
  return Math.max(0, Math.round(raw + spread));
};

export type Decision =
  | { kind: 'delivered' }
  | { kind: 'retry'; next: Webhook; dueAt: number; deferred: boolean }
  | { kind: 'dead'; reason_type: 'unrecoverable' | 'exhausted' | 'blocked_destination' | 'invalid_request' | 'invalid_secret' | ScriptReason; reason: string };

/**
 * What happens to a webhook after one attempt. `webhook.attempt` is the 0-based number
 * of the attempt just made; a deferral (429 + Retry-After) keeps the attempt number and
 * spends the separate deferral budget instead.
 */
export const decide = (webhook: Webhook, c: Classification, nowMs: number, p: RetryPolicy, rand: number): Decision => {
  if (c.class === 'delivered') return { kind: 'delivered' };
  if (c.class === 'blocked')
    return { kind: 'dead', reason_type: 'blocked_destination', reason: 'the endpoint resolves to an address that delivery.allowed_networks does not allow' };
  if (c.class === 'invalid') {
    const what = c.reason_type === 'invalid_secret' ? 'its signing secret cannot sign' : 'the HTTP client refuses its request (a header it will not send)';
    return { kind: 'dead', reason_type: c.reason_type, reason: `the webhook cannot be sent: ${what}; nothing was sent to the endpoint` };
  }
  if (c.class === 'unrecoverable') return { kind: 'dead', reason_type: 'unrecoverable', reason: 'the endpoint refused the webhook with a non-retryable status' };
  if (c.class === 'defer' && webhook.deferrals < p.max_deferrals) {
    const dueAt = nowMs + Math.min(c.delayMs, p.max_retry_after);
    return { kind: 'retry', deferred: true, dueAt, next: { ...webhook, deferrals: webhook.deferrals + 1, scheduled_at: new Date(dueAt).toISOString() } };
  }
  const nextAttempt = webhook.attempt + 1;
  if (nextAttempt >= webhook.max_attempts) {
    return { kind: 'dead', reason_type: 'exhausted', reason: `all ${webhook.max_attempts} attempts failed` };
  }
  const dueAt = nowMs + backoffDelay(webhook.attempt, p, rand);
  return { kind: 'retry', deferred: false, dueAt, next: { ...webhook, attempt: nextAttempt, scheduled_at: new Date(dueAt).toISOString() } };
};
