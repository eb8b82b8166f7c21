import { describe, expect, it } from 'vitest';
import { classify, parseRetryAfter, type AttemptResponse } from '../../core/policy/classify';
import { backoffDelay, decide, type RetryPolicy } from '../../core/policy/retry';
import type { Webhook } from '../../core/domain/webhook';

const NOW = Date.UTC(2025, 5, 1, 12, 0, 0); // a whole second, so HTTP dates are exact
const res = (status: number, retryAfter?: string | null): AttemptResponse => ({ kind: 'response', status, retryAfter });

describe('classify: the outcome table', () => {
  it.each([200, 201, 202, 204, 299])('%i → delivered', (s) => {
    expect(classify(res(s), NOW)).toEqual({ class: 'delivered' });
  });

  it.each([408, 500, 502, 503, 504, 599])('%i → retry, counted against the circuit', (s) => {
    expect(classify(res(s), NOW)).toEqual({ class: 'retry', circuitFailure: true });
  });

  it.each(['timeout', 'network'] as const)('%s → retry, counted against the circuit', (kind) => {
    expect(classify({ kind, error: 'boom' }, NOW)).toEqual({ class: 'retry', circuitFailure: true });
  });

  it.each(['invalid_request', 'invalid_secret'] as const)('%s (refused on this side, nothing sent) → dead-lettered, not an endpoint outcome', (kind) => {
    expect(classify({ kind, error: 'x' }, NOW)).toEqual({ class: 'invalid', reason_type: kind });
  });

  it('a local error before the request left → retry, not a circuit failure', () => {
    expect(classify({ kind: 'local_error', error: 'x' }, NOW)).toEqual({ class: 'retry', circuitFailure: false });
  });

  it.each([undefined, null, '', '   ', 'soon', '12abc'])('429 with Retry-After %j → retry, not a circuit failure', (ra) => {
    expect(classify(res(429, ra), NOW)).toEqual({ class: 'retry', circuitFailure: false });
  });

  it.each([
    ['120', 120_000],
    [' 7 ', 7000],
    ['0', 0],
    [new Date(NOW + 90_000).toUTCString(), 90_000],
    ['Sun, 01 Jun 2025 12:00:45 GMT', 45_000],
    [new Date(NOW - 60_000).toUTCString(), 0],
  ])('429 with Retry-After %j → defer %i ms', (ra, ms) => {
    expect(classify(res(429, ra), NOW)).toEqual({ class: 'defer', delayMs: ms });
  });

  it.each([400, 401, 403, 404, 405, 409, 410, 413, 422, 451, 499])('%i → unrecoverable', (s) => {
    expect(classify(res(s), NOW)).toEqual({ class: 'unrecoverable' });
  });

  it.each([100, 301, 302, 303, 304, 307, 308])('%i → unrecoverable (redirects are not followed)', (s) => {
    expect(classify(res(s), NOW)).toEqual({ class: 'unrecoverable' });
  });

  it('retry_on_status turns listed codes into retries that do not count against the circuit', () => {
    const list = [409, 422, 302];
    expect(classify(res(409), NOW, list)).toEqual({ class: 'retry', circuitFailure: false });
    expect(classify(res(422), NOW, list)).toEqual({ class: 'retry', circuitFailure: false });
    expect(classify(res(302), NOW, list)).toEqual({ class: 'retry', circuitFailure: false });
    expect(classify(res(404), NOW, list)).toEqual({ class: 'unrecoverable' });
  });

  it('retry_on_status changes nothing for statuses that already have a class', () => {
    const list = [200, 500, 429];
    expect(classify(res(200), NOW, list)).toEqual({ class: 'delivered' });
    expect(classify(res(500), NOW, list)).toEqual({ class: 'retry', circuitFailure: true });
    expect(classify(res(429, '3'), NOW, list)).toEqual({ class: 'defer', delayMs: 3000 });
  });

  it('parseRetryAfter reads seconds and HTTP dates relative to now', () => {
    expect(parseRetryAfter('30', NOW)).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Jun 2025 13:00:00 GMT', NOW)).toBe(3_600_000);
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfter('later', NOW)).toBeUndefined();
  });
});

const P: RetryPolicy = { base_delay: 10_000, max_delay: 86_400_000, jitter: 0.2, max_deferrals: 3, max_retry_after: 3_600_000 };

describe('backoffDelay', () => {
  it.each([
    [0, 10_000],
    [1, 20_000],
    [2, 40_000],
    [5, 320_000],
    [10, 10_240_000],
    [11, 10_240_000],
    [19, 10_240_000],
  ])('attempt %i without jitter → %i ms (base * 2^min(attempt,10))', (attempt, ms) => {
    expect(backoffDelay(attempt, { ...P, jitter: 0 }, 0.123)).toBe(ms);
    expect(backoffDelay(attempt, P, 0.5)).toBe(ms); // rand 0.5 is the middle of the spread
  });

  it('caps at max_delay before jitter', () => {
    const p = { ...P, max_delay: 60_000, jitter: 0 };
    expect(backoffDelay(2, p, 0.5)).toBe(40_000);
    expect(backoffDelay(3, p, 0.5)).toBe(60_000);
    expect(backoffDelay(10, p, 0.5)).toBe(60_000);
    expect(backoffDelay(3, { ...p, jitter: 0.2 }, 0)).toBe(48_000);
  });

  it('rand 0 gives -jitter and rand → 1 gives +jitter', () => {
    expect(backoffDelay(0, P, 0)).toBe(8000);
    expect(backoffDelay(0, P, 0.999_999_999)).toBe(12_000);
    expect(backoffDelay(3, P, 0)).toBe(64_000);
    expect(backoffDelay(3, P, 1 - Number.EPSILON)).toBe(96_000);
  });

  it('stays within [raw*(1-jitter), raw*(1+jitter)] for any rand', () => {
    for (let i = 0; i <= 1000; i++) {
      const rand = Math.min(i / 1000, 1 - Number.EPSILON);
      for (const attempt of [0, 4, 12]) {
        const raw = Math.min(P.base_delay * 2 ** Math.min(attempt, 10), P.max_delay);
        const d = backoffDelay(attempt, P, rand);
        expect(d).toBeGreaterThanOrEqual(Math.floor(raw * 0.8));
        expect(d).toBeLessThanOrEqual(Math.ceil(raw * 1.2));
      }
    }
  });

  it('grows with rand (the spread is monotonic)', () => {
    const ds = [0, 0.25, 0.5, 0.75, 0.99].map((r) => backoffDelay(4, P, r));
    expect([...ds].sort((a, b) => a - b)).toEqual(ds);
    expect(new Set(ds).size).toBe(ds.length);
  });
});

const hook = (over: Partial<Webhook> = {}): Webhook => ({
  id: 'wh_01JABCDEFGHJKMNPQRSTVWXYZ0',
  config_id: 'c',
  endpoint: 'https://example.com/h',
  endpoint_hash: 'h',
  payload: '{"a":1.0}',
  headers: {},
  attempt: 0,
  max_attempts: 5,
  deferrals: 0,
  created_at: new Date(NOW - 1000).toISOString(),
  scheduled_at: new Date(NOW - 1000).toISOString(),
  ...over,
});

describe('decide', () => {
  const retry = { class: 'retry', circuitFailure: true } as const;

  it('delivered → delivered', () => {
    expect(decide(hook(), { class: 'delivered' }, NOW, P, 0.5)).toEqual({ kind: 'delivered' });
  });

  it.each(['invalid_request', 'invalid_secret'] as const)('invalid (%s) → dead at once with that reason type', (reason_type) => {
    expect(decide(hook({ attempt: 0, max_attempts: 20 }), { class: 'invalid', reason_type }, NOW, P, 0.5)).toMatchObject({
      kind: 'dead',
      reason_type,
      reason: expect.stringContaining('nothing was sent'),
    });
  });

  it('unrecoverable → dead at once, whatever attempts remain', () => {
    const d = decide(hook({ attempt: 0, max_attempts: 20 }), { class: 'unrecoverable' }, NOW, P, 0.5);
    expect(d).toMatchObject({ kind: 'dead', reason_type: 'unrecoverable' });
  });

  it('a retry moves to the next attempt after the backoff of the attempt just made', () => {
    const w = hook({ attempt: 2, max_attempts: 5 });
    const d = decide(w, retry, NOW, P, 0);
    const due = NOW + backoffDelay(2, P, 0);
    expect(due).toBe(NOW + 32_000);
    expect(d).toEqual({ kind: 'retry', deferred: false, dueAt: due, next: { ...w, attempt: 3, scheduled_at: new Date(due).toISOString() } });
    expect(w.attempt).toBe(2); // the input is not mutated
  });

  it('is exhausted when attempt + 1 >= max_attempts', () => {
    expect(decide(hook({ attempt: 3, max_attempts: 5 }), retry, NOW, P, 0.5).kind).toBe('retry');
    expect(decide(hook({ attempt: 4, max_attempts: 5 }), retry, NOW, P, 0.5)).toMatchObject({ kind: 'dead', reason_type: 'exhausted' });
    expect(decide(hook({ attempt: 0, max_attempts: 1 }), retry, NOW, P, 0.5)).toMatchObject({ kind: 'dead', reason_type: 'exhausted' });
    expect(decide(hook({ attempt: 9, max_attempts: 5 }), retry, NOW, P, 0.5)).toMatchObject({ kind: 'dead', reason_type: 'exhausted' });
  });

  it('a 429 without Retry-After is a normal retry', () => {
    const d = decide(hook({ attempt: 1 }), { class: 'retry', circuitFailure: false }, NOW, P, 0.5);
    expect(d).toMatchObject({ kind: 'retry', deferred: false, dueAt: NOW + 20_000, next: { attempt: 2, deferrals: 0 } });
  });

  it('a deferral keeps the attempt, spends one deferral and is due exactly after Retry-After', () => {
    const w = hook({ attempt: 4, max_attempts: 5, deferrals: 1 }); // even on the last attempt
    const d = decide(w, { class: 'defer', delayMs: 42_000 }, NOW, P, 0.99);
    expect(d).toEqual({ kind: 'retry', deferred: true, dueAt: NOW + 42_000, next: { ...w, deferrals: 2, scheduled_at: new Date(NOW + 42_000).toISOString() } });
  });

  it('a Retry-After longer than max_retry_after is capped', () => {
    const d = decide(hook(), { class: 'defer', delayMs: 5 * 3_600_000 }, NOW, P, 0.5);
    expect(d).toMatchObject({ kind: 'retry', deferred: true, dueAt: NOW + P.max_retry_after });
  });

  it('a Retry-After of 0 is due now', () => {
    expect(decide(hook(), { class: 'defer', delayMs: 0 }, NOW, P, 0.5)).toMatchObject({ kind: 'retry', deferred: true, dueAt: NOW });
  });

  it('after max_deferrals a 429 with Retry-After counts as a normal retry', () => {
    const w = hook({ attempt: 1, deferrals: P.max_deferrals });
    const d = decide(w, { class: 'defer', delayMs: 1000 }, NOW, P, 0.5);
    expect(d).toEqual({ kind: 'retry', deferred: false, dueAt: NOW + 20_000, next: { ...w, attempt: 2, scheduled_at: new Date(NOW + 20_000).toISOString() } });
  });

  it('after max_deferrals a 429 on the last attempt exhausts the webhook', () => {
    const d = decide(hook({ attempt: 4, max_attempts: 5, deferrals: P.max_deferrals }), { class: 'defer', delayMs: 1000 }, NOW, P, 0.5);
    expect(d).toMatchObject({ kind: 'dead', reason_type: 'exhausted' });
  });

  it('walks a whole life: deferrals then retries then exhausted', () => {
    let w = hook({ max_attempts: 3 });
    const kinds: string[] = [];
    const p = { ...P, max_deferrals: 2 };
    for (let i = 0; i < 10; i++) {
      const d = decide(w, { class: 'defer', delayMs: 5000 }, NOW, p, 0.5);
      if (d.kind !== 'retry') {
        kinds.push(d.kind);
        break;
      }
      kinds.push(d.deferred ? `defer@${d.next.attempt}` : `retry@${d.next.attempt}`);
      w = d.next;
    }
    expect(kinds).toEqual(['defer@0', 'defer@0', 'retry@1', 'retry@2', 'dead']);
  });
});
