import { toHowkError } from './exec';
import type { RespArgs } from './resp';

// Sent marks (EndedLookup.markSent) that leave inside the next completeDelivery call of the
// same connection instead of a call of their own. A mark is written right after a 2xx, and the
// same answer ends the delivery's leases: a completeDelivery call that leaves at the end of
// that event-loop turn (core/pipeline/coalesce.ts; after a 1 ms timer on a host without one).
// The call takes every mark waiting as arguments of its own (completeDelivery.lua writes them
// first): one command and one round trip for the completion and its marks. A mark that no
// completion takes within a timer of 0 ms (nothing completing: a stop, a lone mark) leaves on
// its own (`alone`: one writeMarks.lua call).

type Waiting<M> = { marks: readonly M[]; resolve: () => void; reject: (e: unknown) => void };

/** The marks a completion call carries: `write` puts them in its arguments (completeDelivery.lua's marks section). */
export type MarksSection = { write(w: RespArgs): void; done(): void; fail(e: unknown): void };

/** `alone` writes marks no completion took; `section` writes marks as a call's arguments. */
export const createRidingMarks = <M>(alone: (marks: M[]) => Promise<unknown>, section: (w: RespArgs, marks: readonly M[]) => void) => {
  let waiting: Waiting<M>[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** Every waiting mark, for a call to carry; undefined when none waits. */
  const take = (): (MarksSection & { marks: M[] }) | undefined => {
    if (!waiting.length) return undefined;
    const taken = waiting;
    waiting = [];
    if (timer) clearTimeout(timer);
    timer = undefined;
    const marks = taken.flatMap((w) => w.marks);
    return {
      marks,
      write: (w) => section(w, marks),
      done: () => taken.forEach((w) => w.resolve()),
      fail: (e) => taken.forEach((w) => w.reject(toHowkError(e))),
    };
  };

  const leave = (): void => {
    timer = undefined;
    const t = take();
    if (t) alone(t.marks).then(t.done, t.fail);
  };

  return {
    /** Resolves once a round trip wrote the marks; rejects as the write failed (marks are best effort). */
    add(marks: readonly M[]): Promise<void> {
      if (!marks.length) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        waiting.push({ marks, resolve, reject });
        // The completion's end of turn comes first; a completion behind a 0 ms timer (set at the answer, before this one) fires first too.
        timer ??= setTimeout(leave, 0);
      });
    },
    take,
  };
};

/** What a completion call needs of the marks: to take those waiting. */
export type RidingMarks = { take(): MarksSection | undefined };
