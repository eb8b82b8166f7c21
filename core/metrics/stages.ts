// The stages of one delivery, from the enqueue request to the committed offset. Each stage
// is the time since the previous one; the process that sees a stage end records it.
// Cross-process stages (fetched) compare wall clocks of two hosts: their skew is in them.

/** Stage names, in order (docs/OPERATIONS.md, Metrics). */
export const STAGES = ['produced', 'fetched', 'admitted', 'sent', 'responded', 'durable', 'committed'] as const;
export type Stage = (typeof STAGES)[number];

/**
 * Where stage times go. Core code calls it; the host decides what it is (Prometheus
 * histograms in Node, nothing on the edge and in unit tests). Durations are in ms.
 */
export type StageRecorder = {
  /** One webhook spent `ms` in `stage`; `n` webhooks at once (a batch) with the same time. */
  stage(stage: Stage, ms: number, n?: number): void;
  /** A webhook delivered (2xx): its created_at → response received; `retry` when not its first attempt. */
  delivered(ms: number, retry: boolean): void;
};

const nothing = () => {};
export const noStages: StageRecorder = { stage: nothing, delivered: nothing };

/**
 * Histogram bounds in seconds, 4 per doubling from 0.5 ms to ~16 s: a quantile read off
 * them is within 19 % of the truth anywhere in 1 ms-10 s.
 */
export const STAGE_BUCKETS: readonly number[] = Array.from({ length: 61 }, (_, k) => Number((0.0005 * 2 ** (k / 4)).toPrecision(3)));
