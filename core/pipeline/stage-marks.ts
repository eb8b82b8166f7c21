import type { StageRecorder } from '../metrics/stages';
import type { ConsumedBatch } from '../ports/log';
import type { Step } from './attempt';

// The worker's stage marks that concern a whole batch, kept out of the delivery loop.

/** fetched: each record's log timestamp (set by its producer as the produce left) → the batch reached the worker. */
export const fetchedStages = (r: StageRecorder | undefined, batch: ConsumedBatch, now: number): void => {
  if (!r) return;
  for (const rec of batch.records) r.stage('fetched', now - rec.timestamp);
};

/** durable: each attempt's response → its outcome produced and written to the hot state. */
export const durableStages = (r: StageRecorder | undefined, steps: readonly Step[], now: number): void => {
  if (!r) return;
  for (const s of steps) if (s.kind === 'attempted') r.stage('durable', now - s.o.at);
};

/** committed: the batch's handler resolved → its offsets committed, once per record. */
export const committedStage = (r: StageRecorder | undefined): ((records: number, ms: number) => void) | undefined =>
  r ? (records, ms) => r.stage('committed', ms, records) : undefined;
