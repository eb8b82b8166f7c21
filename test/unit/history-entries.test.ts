import { describe, expect, it } from 'vitest';
import type { Webhook } from '../../core/domain/webhook';
import { attemptRecords, heldEntry } from '../../core/pipeline/outcome-records';
import type { DeliveryResult } from '../../core/records/result';
import { ConfigSchema } from '../../core/config/schema';
import { classify } from '../../core/policy/classify';
import { decide } from '../../core/policy/retry';

// What a status history entry keeps for the Inspector: when the next try is, the deferrals
// spent, the Retry-After, the first bytes of the response, and holds that spent no attempt.

const policy = ConfigSchema.parse({}).retry;
const T = Date.UTC(2026, 2, 1, 12, 1, 3);
const webhook = (p: Partial<Webhook> = {}): Webhook => ({
  id: 'wh_1',
  config_id: 'c',
  endpoint: 'https://example.test/h',
  endpoint_hash: 'h',
  payload: '{}',
  headers: {},
  attempt: 0,
  max_attempts: 20,
  deferrals: 0,
  created_at: new Date(T).toISOString(),
  scheduled_at: new Date(T).toISOString(),
  ...p,
});
const response = (status: number, retryAfter: string | null = null, body = '') => ({ kind: 'response' as const, status, retryAfter, bodySnippet: body, durationMs: 1200 });

const recordOf = (w: Webhook, r: ReturnType<typeof response>) => {
  const decision = decide(w, classify({ kind: 'response', status: r.status, retryAfter: r.retryAfter }, T), T, policy, 0.5);
  return attemptRecords({ webhook: w, response: r, at: T, decision }, '1').attempt;
};

describe('status history entries', () => {
  it('a retried attempt keeps its next try, deferrals and the first 256 bytes of the response', () => {
    const e = recordOf(webhook({ attempt: 2 }), response(503, null, 'x'.repeat(1000)));
    expect(e).toMatchObject({ attempt: 3, outcome: 'retry', status_code: 503, next_retry_at: new Date(T + 40_000).toISOString(), deferrals: 0 });
    expect(e.response).toHaveLength(256);
  });

  it('keeps the signing headers the pipeline sent (HMAC values, never a secret)', () => {
    const signed = { 'webhook-timestamp': '1772366463', 'webhook-signature': 'v1,abc=' };
    const w = webhook({ attempt: 0 });
    const r = { ...response(200), signed };
    const decision = decide(w, classify({ kind: 'response', status: 200, retryAfter: null }, T), T, policy, 0.5);
    expect(attemptRecords({ webhook: w, response: r, at: T, decision }, '1').attempt.signed).toEqual(signed);
  });

  it('a 429 deferral keeps the Retry-After as sent and the deferrals spent with it', () => {
    const e = recordOf(webhook({ attempt: 1, deferrals: 3 }), response(429, '30'));
    expect(e).toMatchObject({ outcome: 'deferred', retry_after: '30', deferrals: 4, next_retry_at: new Date(T + 30_000).toISOString() });
    expect(e.response).toBeUndefined();
  });

  it('a hold is an entry that spends no attempt, with its reason and until when', () => {
    expect(heldEntry(webhook({ attempt: 4, deferrals: 1 }), T, 'circuit_open', T + 300_000)).toEqual({
      attempt: 5,
      at: new Date(T).toISOString(),
      outcome: 'held',
      status_code: null,
      error: null,
      duration_ms: 0,
      next_retry_at: new Date(T + 300_000).toISOString(),
      deferrals: 1,
      held: 'circuit_open',
    });
  });
});

describe('howk.results records', () => {
  it('are the JSON of a DeliveryResult (fields in schema order), escapes and nulls included', () => {
    const cases: [Webhook, Parameters<typeof attemptRecords>[0]['response'], number][] = [
      [webhook(), response(200), 0],
      [webhook({ id: 'wh_"q"\\', config_id: 'c\u2028é', endpoint: 'https://example.test/h?a="b"', attempt: 2 }), response(503), 0],
      [webhook({ attempt: 19 }), { kind: 'network', error: 'connect "ECONNREFUSED"\n', durationMs: NaN }, 0],
    ];
    for (const [w, r, rand] of cases) {
      const c = r.kind === 'response' ? classify({ kind: 'response', status: r.status, retryAfter: r.retryAfter }, T) : classify({ kind: 'network', error: r.error }, T);
      const decision = decide(w, c, T, policy, rand);
      const { result, status } = attemptRecords({ webhook: w, response: r, at: T, decision }, '1');
      const expected: DeliveryResult = {
        webhook_id: w.id,
        config_id: w.config_id,
        endpoint: w.endpoint,
        endpoint_hash: w.endpoint_hash,
        attempt: w.attempt + 1,
        outcome: r.kind === 'response' && r.status === 200 ? 'delivered' : decision.kind === 'retry' ? 'retry' : 'exhausted',
        success: decision.kind === 'delivered',
        status_code: r.kind === 'response' ? r.status : null,
        error: status.last_error,
        duration_ms: r.durationMs,
        next_retry_at: status.next_retry_at,
        timestamp: new Date(T).toISOString(),
      };
      expect(result).toBe(JSON.stringify(expected));
    }
  });
});
