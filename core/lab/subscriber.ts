import { ValidationError } from '../errors/errors';
import type { AttemptResponse } from '../policy/classify';
import type { LabConfig } from './config';
import { dur } from './text';
import type { Behaviour } from './types';

// A simulated subscriber: what it does with one request, decided when the request arrives.

export type Reaction = {
  /** What the sender sees, in the shape core/policy/classify.ts reads. */
  response: AttemptResponse;
  /** How long the attempt holds a worker. */
  durationMs: number;
  /** Whether the subscriber processed the request (applied its effect, or dropped it as a duplicate). */
  processed: boolean;
  /** Short outcome for the attempt history. */
  outcome: string;
  /** Processed, but the answer never reached the sender. */
  lost?: boolean;
};

export const react = (b: Behaviour, c: LabConfig): Reaction => {
  switch (b.kind) {
    case 'healthy':
      return { response: { kind: 'response', status: 200 }, durationMs: c.latencyMs, processed: true, outcome: '200' };
    case 'failing':
      return { response: { kind: 'response', status: b.status }, durationMs: c.latencyMs, processed: false, outcome: String(b.status) };
    case 'rate_limiting':
      return {
        response: { kind: 'response', status: 429, retryAfter: String(b.retryAfterS) },
        durationMs: c.latencyMs,
        processed: false,
        outcome: `429 Retry-After ${b.retryAfterS} s`,
      };
    case 'slow':
      if (b.latencyMs < c.timeoutMs) return { response: { kind: 'response', status: 200 }, durationMs: b.latencyMs, processed: true, outcome: '200' };
      return { response: { kind: 'timeout', error: `no answer within ${dur(c.timeoutMs)}` }, durationMs: c.timeoutMs, processed: true, outcome: 'timeout' };
    case 'lost_response':
      return { response: { kind: 'timeout', error: 'the response was lost' }, durationMs: c.timeoutMs, processed: true, outcome: 'timeout (response lost)', lost: true };
  }
};

const int = (v: unknown, field: string, min: number, max: number): number => {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new ValidationError(`${field} must be an integer from ${min} to ${max}`, field);
  return v;
};

/** A checked copy of a behaviour a UI (or a test) asks for. */
export const checkBehaviour = (b: Behaviour): Behaviour => {
  switch (b?.kind) {
    case 'healthy':
    case 'lost_response':
      return { kind: b.kind };
    case 'failing': {
      const status = int(b.status, 'behaviour.status', 400, 599);
      if (status === 429) throw new ValidationError('a 429 subscriber is rate_limiting (it names a Retry-After)', 'behaviour.status');
      return { kind: 'failing', status };
    }
    case 'slow':
      return { kind: 'slow', latencyMs: int(b.latencyMs, 'behaviour.latencyMs', 1, 600_000) };
    case 'rate_limiting':
      return { kind: 'rate_limiting', retryAfterS: int(b.retryAfterS, 'behaviour.retryAfterS', 0, 3600) };
    default:
      throw new ValidationError('behaviour.kind must be healthy, failing, slow, rate_limiting or lost_response', 'behaviour.kind');
  }
};

export const describeBehaviour = (b: Behaviour): string => {
  switch (b.kind) {
    case 'healthy':
      return 'healthy: answers 200 and applies each webhook id once';
    case 'failing':
      return `failing: answers ${b.status} to every request`;
    case 'slow':
      return `slow: answers after ${dur(b.latencyMs)}`;
    case 'rate_limiting':
      return `rate limiting: answers 429 with Retry-After ${b.retryAfterS} s`;
    case 'lost_response':
      return 'losing responses: applies each request, but its answer never arrives';
  }
};
