import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../core/config/schema';
import { backoffDelay } from '../../core/policy/retry';
import { describeEntry, span, type HistoryEntry } from '../../console/inspector/sentences';

// The Inspector's sentences, on fixed history entries and the default retry policy
// (base 10 s, ×2 per attempt, ±20 %, 10 deferrals).

const retry = ConfigSchema.parse({}).retry;
const p = { base_delay: retry.base_delay, max_delay: retry.max_delay, jitter: retry.jitter, max_deferrals: retry.max_deferrals };
const entry = (e: Partial<HistoryEntry>): HistoryEntry => ({
  attempt: 1,
  at: '2026-03-01T12:01:03.000Z',
  outcome: 'retry',
  status_code: 503,
  error: 'HTTP 503',
  duration_ms: 1200,
  ...e,
});

describe('inspector sentences', () => {
  it('tells a retried attempt with its backoff, the real policy numbers and when the next try is', () => {
    // Attempt 4 is the fourth send (no deferral): backoff 10 s × 2³ = 80 s.
    const next = new Date(Date.parse('2026-03-01T12:01:03.000Z') + backoffDelay(3, retry, 0.5)).toISOString();
    expect(describeEntry(entry({ attempt: 4, next_retry_at: next, deferrals: 0 }), p, 20)).toBe(
      'Attempt 4 at 12:01:03 got 503 after 1.2 s; the next try is at 12:02:23, 1 min 20 s later: backoff 10 s × 2³ ± 20 %.',
    );
  });

  it('counts deferrals out of the exponent and says when the backoff is capped', () => {
    const s = describeEntry(entry({ attempt: 3, deferrals: 1, next_retry_at: '2026-03-01T12:01:23.000Z' }), p, 20);
    expect(s).toContain('backoff 10 s × 2¹ ± 20 %');
    const capped = describeEntry(entry({ attempt: 19, deferrals: 0, next_retry_at: '2026-03-02T00:01:03.000Z' }), { ...p, max_delay: 3_600_000 }, 20);
    expect(capped).toContain('12 h later: backoff capped at 1 h ± 20 %');
  });

  it('tells a 429 with Retry-After as a deferral that spent no attempt, with the deferrals left', () => {
    const s = describeEntry(entry({ attempt: 2, outcome: 'deferred', status_code: 429, retry_after: '30', deferrals: 6, next_retry_at: '2026-03-01T12:01:33.000Z' }), p, 20);
    expect(s).toBe('Attempt 2 at 12:01:03 got 429 with Retry-After 30: deferred, next try at 12:01:33, no attempt spent, 4 deferrals left.');
  });

  it('tells an open circuit as parked until the probe time, no attempt spent', () => {
    const s = describeEntry(
      entry({ attempt: 5, outcome: 'held', held: 'circuit_open', status_code: null, error: null, duration_ms: 0, next_retry_at: '2026-03-01T12:06:00.000Z' }),
      p,
      20,
    );
    expect(s).toBe('At 12:01:03, circuit open: parked until 12:06:00, no attempt spent.');
    const rl = describeEntry(entry({ outcome: 'held', held: 'rate_limited', next_retry_at: '2026-03-01T12:01:04.000Z' }), p, 20);
    expect(rl).toBe("At 12:01:03, the endpoint's rate limit was reached: parked until 12:01:04, no attempt spent.");
  });

  it('tells the end: delivered, exhausted, not retryable, a network error', () => {
    expect(describeEntry(entry({ outcome: 'delivered', status_code: 200, error: null, duration_ms: 85 }), p, 20)).toBe('Attempt 1 at 12:01:03 got 200 after 85 ms: delivered.');
    expect(describeEntry(entry({ attempt: 3, outcome: 'exhausted', status_code: 500 }), p, 3)).toBe(
      'Attempt 3 at 12:01:03 got 500 after 1.2 s: that was the last of 3 attempts: dead-lettered (exhausted).',
    );
    expect(describeEntry(entry({ outcome: 'unrecoverable', status_code: 400 }), p, 20)).toBe(
      'Attempt 1 at 12:01:03 got 400 after 1.2 s: the status is not retryable: dead-lettered.',
    );
    expect(
      describeEntry(entry({ status_code: null, error: 'timeout: no response in 5 s', duration_ms: 5000, next_retry_at: '2026-03-01T12:01:13.000Z', deferrals: 0 }), p, 20),
    ).toBe('Attempt 1 at 12:01:03 failed (timeout: no response in 5 s) after 5 s; the next try is at 12:01:13, 10 s later: backoff 10 s × 2⁰ ± 20 %.');
  });

  it('writes durations the way people say them', () => {
    expect([span(850), span(1234), span(40_000), span(120_000), span(90_000), span(3 * 3_600_000), span(3_900_000)]).toEqual([
      '850 ms',
      '1.2 s',
      '40 s',
      '2 min',
      '1 min 30 s',
      '3 h',
      '1 h 5 min',
    ]);
  });
});
