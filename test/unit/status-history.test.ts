import { describe, expect, it } from 'vitest';
import { HISTORY_LIMIT, type AttemptRecord } from '../../core/domain/status';
import { historyOf } from '../../core/domain/status-history';

const attempt = (n: number, second = n): AttemptRecord => ({
  attempt: n,
  at: new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString(),
  outcome: 'retry',
  status_code: 503,
  error: null,
  duration_ms: 1,
});
const text = (a: AttemptRecord) => JSON.stringify(a);

// The history a status read shows, from the hash's field and the list older workers write.
describe('historyOf', () => {
  it('reads the field alone, the list alone, or nothing', () => {
    expect(historyOf([], null)).toEqual([]);
    expect(historyOf([], [0, 1].map((n) => text(attempt(n))).join('\n'))).toEqual([attempt(0), attempt(1)]);
    expect(historyOf([text(attempt(0))], undefined)).toEqual([attempt(0)]);
  });

  it('merges both in time order, the list first on a tie, and keeps the last HISTORY_LIMIT', () => {
    expect(historyOf([text(attempt(0)), text(attempt(2))], [text(attempt(1)), text(attempt(3))].join('\n'))).toEqual([0, 1, 2, 3].map((n) => attempt(n)));
    expect(historyOf([text(attempt(0, 5))], text(attempt(1, 5)))).toEqual([attempt(0, 5), attempt(1, 5)]);
    const list = Array.from({ length: 15 }, (_, i) => text(attempt(i)));
    const field = Array.from({ length: 15 }, (_, i) => text(attempt(i + 15))).join('\n');
    expect(historyOf(list, field).map((a) => a.attempt)).toEqual(Array.from({ length: HISTORY_LIMIT }, (_, i) => i + 30 - HISTORY_LIMIT));
  });
});
