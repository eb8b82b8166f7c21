// The Inspector's attempt history in plain English: a pure function of the status history
// and the server's retry policy (served in /console/env.json), unit-tested on fixed inputs.

export type RetryNumbers = { base_delay: number; max_delay: number; jitter: number; max_deferrals: number };

export type HistoryEntry = {
  attempt: number;
  at: string;
  outcome: string;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  next_retry_at?: string | null;
  deferrals?: number;
  retry_after?: string;
  held?: 'circuit_open' | 'rate_limited';
};

const SUPERSCRIPT = '⁰¹²³⁴⁵⁶⁷⁸⁹';
const sup = (n: number) => [...String(n)].map((d) => SUPERSCRIPT[Number(d)]).join('');

/** 12:01:03 (UTC). */
export const clock = (iso: string): string => iso.slice(11, 19);

/** 850 ms, 1.2 s, 40 s, 2 min, 1 min 30 s, 3 h, 1 h 5 min. */
export const span = (ms: number): string => {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(Math.round(ms / 100) / 10).toString()} s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return s % 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s / 60} min`;
  const m = Math.round(s / 60);
  return m % 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${m / 60} h`;
};

const got = (e: HistoryEntry): string => (e.status_code !== null ? `got ${e.status_code}` : `failed (${e.error ?? 'no response'})`);

const head = (e: HistoryEntry) => `Attempt ${e.attempt} at ${clock(e.at)} ${got(e)} after ${span(e.duration_ms)}`;

const backoff = (e: HistoryEntry, p: RetryNumbers): string => {
  // The exponent is the 0-based number of the attempt just made (deferrals do not count).
  const k = Math.min(e.attempt - 1 - (e.deferrals ?? 0), 10);
  const raw = p.base_delay * 2 ** k;
  const jitter = p.jitter ? ` ± ${Math.round(p.jitter * 100)} %` : '';
  if (raw >= p.max_delay) return `backoff capped at ${span(p.max_delay)}${jitter}`;
  return `backoff ${span(p.base_delay)} × 2${sup(k)}${jitter}`;
};

const later = (from: string, to: string) => span(Date.parse(to) - Date.parse(from));

const DEAD: Record<string, string> = {
  unrecoverable: 'the status is not retryable: dead-lettered',
  blocked_destination: 'the endpoint resolves to an address delivery is not allowed to reach: dead-lettered',
  invalid_request: 'the request cannot be sent: dead-lettered',
  invalid_secret: 'its signing secret cannot sign: dead-lettered',
};

/** One sentence per history entry, oldest first. */
export const describeEntry = (e: HistoryEntry, p: RetryNumbers, maxAttempts: number): string => {
  if (e.outcome === 'held') {
    const why = e.held === 'rate_limited' ? "the endpoint's rate limit was reached" : 'circuit open';
    const until = e.next_retry_at ? `parked until ${clock(e.next_retry_at)}` : 'parked';
    return `At ${clock(e.at)}, ${why}: ${until}, no attempt spent.`;
  }
  if (e.outcome === 'delivered') return `${head(e)}: delivered.`;
  if (e.outcome === 'deferred') {
    const left = Math.max(0, p.max_deferrals - (e.deferrals ?? 0));
    const ra = e.retry_after ? ` with Retry-After ${e.retry_after}` : '';
    const next = e.next_retry_at ? `, next try at ${clock(e.next_retry_at)}` : '';
    return `Attempt ${e.attempt} at ${clock(e.at)} got ${e.status_code ?? 'a deferral'}${ra}: deferred${next}, no attempt spent, ${left} deferral${left === 1 ? '' : 's'} left.`;
  }
  if (e.outcome === 'retry') {
    if (!e.next_retry_at) return `${head(e)}; it will be tried again.`;
    return `${head(e)}; the next try is at ${clock(e.next_retry_at)}, ${later(e.at, e.next_retry_at)} later: ${backoff(e, p)}.`;
  }
  if (e.outcome === 'exhausted') return `${head(e)}: that was the last of ${maxAttempts} attempts: dead-lettered (exhausted).`;
  const why = DEAD[e.outcome] ?? `${e.outcome.replaceAll('_', ' ')}: dead-lettered`;
  return `${head(e)}: ${why}.`;
};

export const describeHistory = (history: HistoryEntry[], p: RetryNumbers, maxAttempts: number): string[] => history.map((e) => describeEntry(e, p, maxAttempts));
