// What the HTTP layer reports about its door: requests in hand, requests waiting for a first
// attempt, refusals, and the outstanding webhooks of the configs it checked. The host turns
// them into Prometheus series (workers/node/metrics.ts); without a host meter nothing is kept.

export type Refusal = 'inflight' | 'outstanding' | 'wait_busy';

export type DoorMeter = {
  /** Requests this instance has in hand right now. */
  inflight(n: number): void;
  /** Enqueue requests waiting for their first attempt right now. */
  waiting(n: number): void;
  /** A request answered at once: 503 (inflight), 429 (outstanding), or a wait not granted (wait_busy). */
  refused(reason: Refusal): void;
  /** The outstanding webhooks of a config, as last read. */
  outstanding(configId: string, n: number): void;
};

export const noDoorMeter: DoorMeter = { inflight: () => {}, waiting: () => {}, refused: () => {}, outstanding: () => {} };
