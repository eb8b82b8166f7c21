import { createBatcher } from '../domain/batcher';
import type { Webhook } from '../domain/webhook';
import { errorMessage } from '../errors/errors';
import type { EndedLookup, SentMark } from '../ports/hot-state';
import type { Clock } from '../ports/clock';
import type { Logger } from '../ports/logger';
import type { Step } from './attempt';

/** The header of a record the scheduler put back on the pending topic (a retry, or a lease that ran out). */
export const RESCHEDULED = 'howk-rescheduled';
export const RESCHEDULED_HEADERS: Readonly<Record<string, string>> = Object.freeze({ [RESCHEDULED]: '1' });

/** Marks waiting past this many (Redis slow or away) are dropped: a mark is an optimisation, never owed. */
const MAX_QUEUED = 10_000;
/** Mark writes in flight at once: past it, marks gather for the next one. */
const MAX_WRITES = 4;

/**
 * Writes a sent mark (EndedLookup.markSent) for every pass an endpoint answered 2xx, as soon as
 * the answer is in: the marks of the answers of one task in one write, up to MAX_WRITES writes
 * in flight (a mark waiting behind another write is a wider window for a kill; past it, the
 * marks of the answers that came meanwhile go in the next one). The mark reaches Redis a round
 * trip after the 2xx, where the outcome waits for its batch (outcome_linger, straggler_after)
 * and a Kafka produce: a worker
 * killed in between leaves the mark, and the next owner of the record writes the outcome
 * instead of sending it again (known-passes.ts). A failed write is dropped (the copy is sent).
 */
export const createSentMarks = (ended: EndedLookup | undefined, log: Logger, clock: Clock) => {
  const write = ended?.markSent?.bind(ended);
  let warned = 0;
  const marks =
    write &&
    createBatcher<{ id: string; mark: SentMark }, void>({
      // After the current task: the answers that came in together go in one write.
      start: 'microtask',
      maxInFlight: MAX_WRITES,
      run: (taken) =>
        write(taken).catch((e: unknown) => {
          // Once a minute at most: while Redis is away every batch would log it.
          if (clock.now() - warned > 60_000) {
            warned = clock.now();
            log.warn('sent marks not written; a copy of these deliveries consumed again would be sent again', { error: errorMessage(e), marks: taken.length });
          }
        }),
    });
  return {
    /** Marks `s` when it is a pass answered 2xx. */
    step(s: Step): void {
      if (!marks || s.kind !== 'attempted' || s.o.decision.kind !== 'delivered' || s.o.response.kind !== 'response') return;
      if (marks.waiting >= MAX_QUEUED) return;
      const w = s.o.webhook;
      void marks.add({ id: w.id, mark: { pass: w.attempt + w.deferrals, status: s.o.response.status, at: s.o.at, durationMs: s.o.response.durationMs } });
    },
  };
};

/**
 * The outcome of a pass that a sent mark says was answered 2xx: written as the pass's own
 * outcome (results, tombstone, delivered status), since the pass that got the answer may
 * have died before writing it. Nothing is sent.
 */
export const replayedStep = (w: Webhook, m: SentMark): Step => ({
  kind: 'attempted',
  o: { webhook: w, at: m.at, decision: { kind: 'delivered' }, response: { kind: 'response', status: m.status, retryAfter: null, bodySnippet: '', durationMs: m.durationMs } },
});
