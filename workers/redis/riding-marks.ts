import type { ChainableCommander } from 'ioredis';
import { toHowkError } from './exec';

// Sent marks (EndedLookup.markSent) that leave with the next guards call of the same
// connection instead of a round trip of their own. A mark is written right after a 2xx, and
// the same answer ends the delivery's leases: a completeDelivery call that leaves at the end
// of that event-loop turn (core/pipeline/coalesce.ts; after a 1 ms timer on a host without
// one). At a light load each delivery paid both round trips; now the marks waiting go in the
// completion's pipeline (one write for them all), one round trip for both. A mark that no
// guards call takes within a timer of 0 ms (nothing completing: a stop, a lone mark) leaves on
// its own, as before.

/** Writes the commands of these marks into a pipeline; returns how many it wrote. */
export type MarkWriter<M> = (p: ChainableCommander, marks: readonly M[]) => number;

type Waiting<M> = { marks: readonly M[]; resolve: () => void; reject: (e: unknown) => void };

/** The marks a pipeline took: settles them with that pipeline's replies (from `offset`) or its failure. */
export type Boarded = { settle: (replies: [Error | null, unknown][] | null, offset: number) => void; fail: (e: unknown) => void };

export const createRidingMarks = <M>(newPipeline: () => ChainableCommander, write: MarkWriter<M>) => {
  let waiting: Waiting<M>[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** Puts every waiting mark's commands into `p`; undefined when none waits. */
  const board = (p: ChainableCommander): Boarded | undefined => {
    if (!waiting.length) return undefined;
    const taken = waiting;
    waiting = [];
    if (timer) clearTimeout(timer);
    timer = undefined;
    // Every waiting mark in one write: they succeed or fail together.
    const count = write(
      p,
      taken.flatMap((w) => w.marks),
    );
    return {
      settle: (replies, offset) => {
        const mine = replies?.slice(offset, offset + count) ?? [];
        const err = replies ? mine.find(([e]) => e)?.[0] : new Error('redis: pipeline discarded');
        taken.forEach((w) => (err ? w.reject(toHowkError(err)) : w.resolve()));
      },
      fail: (e) => taken.forEach((w) => w.reject(toHowkError(e))),
    };
  };

  const alone = (): void => {
    timer = undefined;
    const p = newPipeline();
    const boarded = board(p);
    if (!boarded) return;
    p.exec().then(
      (replies) => boarded.settle(replies, 0),
      (e: unknown) => boarded.fail(e),
    );
  };

  return {
    /** Resolves once a round trip wrote the marks; rejects as the write failed (marks are best effort). */
    add(marks: readonly M[]): Promise<void> {
      if (!marks.length) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        waiting.push({ marks, resolve, reject });
        // The completion's end of turn comes first; a completion behind a 0 ms timer (set at the answer, before this one) fires first too.
        timer ??= setTimeout(alone, 0);
      });
    },
    board,
    /** True while some marks wait for a round trip. */
    waiting: (): boolean => waiting.length > 0,
  };
};

export type RidingMarks = Pick<ReturnType<typeof createRidingMarks>, 'board' | 'waiting'>;
