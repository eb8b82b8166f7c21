import type { ClientFailure } from '../domain/delivery-response';
import type { CircuitOutcome } from './circuit';

// Outcome classification of one HTTP attempt. Pure.

export type AttemptResponse = { kind: 'response'; status: number; retryAfter?: string | null } | { kind: 'timeout' | 'network' | 'blocked' | ClientFailure; error: string };

export type Classification =
  | { class: 'delivered' }
  /** Worth another attempt; `circuitFailure` says whether it counts against the endpoint's circuit. */
  | { class: 'retry'; circuitFailure: boolean }
  /** 429 with a usable Retry-After: retry exactly then, no failure counted. */
  | { class: 'defer'; delayMs: number }
  | { class: 'unrecoverable' }
  /** The destination is forbidden (SSRF guard): dead-letter without contacting it. */
  | { class: 'blocked' }
  /** Refused on this side before anything was sent: the webhook's own fault, so it dead-letters; never the endpoint's. */
  | { class: 'invalid'; reason_type: 'invalid_request' | 'invalid_secret' };

/** Retry-After as seconds or an HTTP date → ms from now; undefined when absent or unreadable. */
export const parseRetryAfter = (value: string | null | undefined, nowMs: number): number | undefined => {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // Only an IMF-fixdate or the obsolete forms (they all name a weekday or GMT); V8 reads "1.5" or "-5" as dates.
  if (!/^[A-Za-z]{3},? /.test(v) || !/\d{4}|\d{2}-\w{3}-\d{2}/.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
};

export const classify = (r: AttemptResponse, nowMs: number, retryOnStatus: readonly number[] = []): Classification => {
  if (r.kind === 'blocked') return { class: 'blocked' };
  if (r.kind === 'invalid_request' || r.kind === 'invalid_secret') return { class: 'invalid', reason_type: r.kind };
  // A local error may not repeat (the webhook gets its retries) but is not the endpoint's doing.
  if (r.kind === 'local_error') return { class: 'retry', circuitFailure: false };
  if (r.kind !== 'response') return { class: 'retry', circuitFailure: true };
  const s = r.status;
  if (s >= 200 && s < 300) return { class: 'delivered' };
  if (s === 429) {
    const delayMs = parseRetryAfter(r.retryAfter, nowMs);
    return delayMs === undefined ? { class: 'retry', circuitFailure: false } : { class: 'defer', delayMs };
  }
  if (s === 408 || s >= 500) return { class: 'retry', circuitFailure: true };
  if (retryOnStatus.includes(s)) return { class: 'retry', circuitFailure: false };
  // 1xx/3xx (redirects are not followed) and other 4xx cannot succeed by repetition.
  return { class: 'unrecoverable' };
};

/** What an attempt's classification tells the endpoint's circuit breaker. */
export const circuitOutcome = (c: Classification): CircuitOutcome => {
  switch (c.class) {
    case 'delivered':
    case 'unrecoverable': // the endpoint answered: it is up
      return 'success';
    case 'retry':
      return c.circuitFailure ? 'failure' : 'neutral';
    default:
      return 'neutral';
  }
};
