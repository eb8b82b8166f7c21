import type { RetryPolicy } from '../policy/retry';
import type { LogLine } from './types';

// Plain-English formatting of simulated times and the log ring.

/** A duration: "4 s", "2.3 s", "300 ms". */
export const dur = (ms: number): string => {
  if (ms < 1000) return `${ms} ms`;
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
};

/** A moment on the simulated clock: "10.6 s". */
export const at = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

const SUP = '⁰¹²³⁴⁵⁶⁷⁸⁹';
export const sup = (n: number): string => [...String(n)].map((d) => SUP[Number(d)]).join('');

/** How backoffDelay (core/policy/retry.ts) reached its figure for the 0-based `attempt`. */
export const backoffText = (attempt: number, p: RetryPolicy): string => {
  const exp = Math.min(attempt, 10);
  const raw = p.base_delay * 2 ** exp;
  const capped = raw > p.max_delay ? `, capped at ${dur(p.max_delay)}` : '';
  const jitter = p.jitter > 0 ? ` ± ${Math.round(p.jitter * 100)} %` : '';
  return `backoff ${dur(p.base_delay)} × 2${sup(exp)}${capped}${jitter}`;
};

export type LogRing = { lines: LogLine[]; seq: number; bound: number };

export const logRing = (bound: number): LogRing => ({ lines: [], seq: 0, bound });

export const pushLine = (r: LogRing, when: number, text: string): void => {
  r.lines.push({ seq: ++r.seq, at: when, text });
  if (r.lines.length > r.bound) r.lines.splice(0, r.lines.length - r.bound);
};
