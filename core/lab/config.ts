import { ValidationError } from '../errors/errors';
import type { CircuitParams } from '../policy/circuit';
import type { RetryPolicy } from '../policy/retry';

// The Lab's parameters. The policy sections have the shape of Howk's own settings (retry,
// circuit_breaker, rate_limit, delivery.timeout) and go unchanged into the same policy
// functions the workers call; the values are chosen so a story fits in a minute of
// simulated time, not taken from Howk's defaults (docs/CONFIG.md has those).

export type LabSubscriberSpec = { id: string; name: string; url: string };

export type LabConfig = {
  /** Attempts in flight at once across all subscribers (the worker's connections). */
  workers: number;
  /** How long a healthy subscriber takes to answer. */
  latencyMs: number;
  /** delivery.timeout: a request without an answer by then is a timeout. */
  timeoutMs: number;
  /** retry.max_attempts. */
  maxAttempts: number;
  retry: RetryPolicy;
  circuit: CircuitParams;
  /** rate_limit: tokens per second per subscriber endpoint and the bucket's size. */
  rateLimit: { rate: number; burst: number };
  /** Deliveries not yet delivered or dead-lettered; a send that would pass it is rejected. */
  queueBound: number;
  /** Most events one burst command sends; larger requests are clamped. */
  burstBound: number;
  logBound: number;
  /** Attempts kept per delivery (the oldest are dropped). */
  historyBound: number;
  /** Finished deliveries kept for the table (the oldest are dropped; counters keep counting). */
  finishedBound: number;
  /** Retry-After of a subscriber set to rate-limit without saying how long. */
  retryAfterS: number;
  subscribers: LabSubscriberSpec[];
};

export const LAB_CONFIG: LabConfig = {
  workers: 4,
  latencyMs: 300,
  timeoutMs: 2000,
  maxAttempts: 5,
  retry: { base_delay: 2000, max_delay: 60_000, jitter: 0.2, max_deferrals: 6, max_retry_after: 60_000 },
  circuit: { failure_threshold: 3, failure_window: 30_000, recovery_timeout: 10_000, probe_interval: 5000, success_threshold: 1 },
  rateLimit: { rate: 1, burst: 3 },
  queueBound: 200,
  burstBound: 25,
  logBound: 300,
  historyBound: 20,
  finishedBound: 300,
  retryAfterS: 4,
  subscribers: [
    { id: 'billing', name: 'Billing', url: 'https://billing.example/webhooks' },
    { id: 'shipping', name: 'Shipping', url: 'https://shipping.example/webhooks' },
    { id: 'crm', name: 'CRM', url: 'https://crm.example/webhooks' },
  ],
};

export type LabConfigOverrides = Partial<Omit<LabConfig, 'retry' | 'circuit' | 'rateLimit'>> & {
  retry?: Partial<RetryPolicy>;
  circuit?: Partial<CircuitParams>;
  rateLimit?: Partial<LabConfig['rateLimit']>;
};

const positive = (v: number, field: string, min = 1): void => {
  if (!Number.isFinite(v) || v < min) throw new ValidationError(`${field} must be a number ≥ ${min}`, field);
};

export const labConfig = (o: LabConfigOverrides = {}): LabConfig => {
  const c: LabConfig = {
    ...LAB_CONFIG,
    ...o,
    retry: { ...LAB_CONFIG.retry, ...o.retry },
    circuit: { ...LAB_CONFIG.circuit, ...o.circuit },
    rateLimit: { ...LAB_CONFIG.rateLimit, ...o.rateLimit },
    subscribers: (o.subscribers ?? LAB_CONFIG.subscribers).map((s) => ({ ...s })),
  };
  for (const f of ['workers', 'latencyMs', 'timeoutMs', 'maxAttempts', 'queueBound', 'burstBound', 'logBound', 'historyBound', 'finishedBound'] as const) positive(c[f], f);
  positive(c.retryAfterS, 'retryAfterS', 0);
  positive(c.retry.base_delay, 'retry.base_delay', 0);
  positive(c.circuit.failure_threshold, 'circuit.failure_threshold');
  positive(c.circuit.success_threshold, 'circuit.success_threshold');
  // A rate of 0 turns the limiter off, as rate_limit.rate = 0 does in Howk.
  positive(c.rateLimit.rate, 'rateLimit.rate', 0);
  positive(c.rateLimit.burst, 'rateLimit.burst');
  if (!c.subscribers.length) throw new ValidationError('the Lab needs at least one subscriber', 'subscribers');
  if (new Set(c.subscribers.map((s) => s.id)).size !== c.subscribers.length) throw new ValidationError('subscriber ids must be unique', 'subscribers');
  return c;
};

export type ParameterRow = { parameter: string; value: string; note: string };

const s = (ms: number) => `${ms / 1000} s`;

/** The parameter table a UI shows, made from the configuration the engine runs on. */
export const parameterTable = (c: LabConfig): ParameterRow[] => [
  { parameter: 'Workers', value: `${c.workers} concurrent attempts`, note: 'Shared by all subscribers; a parked delivery holds none' },
  { parameter: 'Attempt latency', value: `${c.latencyMs} ms simulated`, note: 'How long a healthy subscriber takes to answer' },
  { parameter: 'Timeout', value: s(c.timeoutMs), note: 'A lost response is seen as a timeout after this long' },
  { parameter: 'Attempts', value: `${c.maxAttempts} at most`, note: 'The last failure dead-letters the delivery' },
  {
    parameter: 'Backoff',
    value: `${s(c.retry.base_delay)} × 2^attempt, capped at ${s(c.retry.max_delay)}, ± ${Math.round(c.retry.jitter * 100)} %`,
    note: 'Exponential, bounded, with seeded jitter',
  },
  { parameter: '429 deferrals', value: `${c.retry.max_deferrals} per delivery`, note: 'Retried exactly at Retry-After; no attempt spent' },
  { parameter: 'Circuit threshold', value: `${c.circuit.failure_threshold} failures within ${s(c.circuit.failure_window)}`, note: "Opens the subscriber's circuit" },
  {
    parameter: 'Circuit cooldown',
    value: s(c.circuit.recovery_timeout),
    note: `Then one probe per ${s(c.circuit.probe_interval)}; ${c.circuit.success_threshold} good probe(s) close it`,
  },
  {
    parameter: 'Rate limit',
    value: c.rateLimit.rate > 0 ? `${c.rateLimit.burst} tokens, refill ${c.rateLimit.rate} per second` : 'off',
    note: 'Token bucket per subscriber; waiting costs no attempt',
  },
  { parameter: 'Queue bound', value: `${c.queueBound} deliveries`, note: 'Outstanding deliveries; further sends are rejected' },
  { parameter: 'Burst bound', value: `${c.burstBound} events`, note: 'Per burst command; larger requests are clamped' },
  { parameter: 'Log bound', value: `${c.logBound} lines`, note: 'Ring buffer' },
];
