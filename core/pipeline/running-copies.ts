import type { Webhook } from '../domain/webhook';
import { passKey } from './recent-outcomes';

/** A copy of a pass and the run of its batch (every lane of it, handed-off ones too). */
type Copy = { w: Webhook; running: Promise<unknown> };

/**
 * The copies of each pass (passKey) a deliverer is running, oldest first. A partition fetched
 * again while its earlier batch still runs, or a retry enqueued twice, puts two copies of one
 * pass in a worker at once; only the oldest may be leased (known-passes.ts, pinCopy). Every
 * webhook delivered passes through here: its key is built once, and a pass with one copy (all
 * but a few) costs one entry and no array copy when it goes.
 */
export const createRunningCopies = () => {
  const copies = new Map<string, Copy[]>();
  const unregister = (keys: readonly string[], hooks: readonly Webhook[]): void => {
    keys.forEach((k, i) => {
      const c = copies.get(k);
      if (!c) return;
      if (c.length === 1) {
        if (c[0]!.w === hooks[i]) copies.delete(k);
        return;
      }
      const at = c.findIndex((x) => x.w === hooks[i]);
      if (at >= 0) c.splice(at, 1);
    });
  };
  return {
    /** `hooks` run until `running` settles (every lane of their batch, handed-off ones too). */
    track(hooks: readonly Webhook[], running: Promise<unknown>): void {
      const keys = hooks.map(passKey);
      keys.forEach((k, i) => {
        const copy = { w: hooks[i]!, running };
        const c = copies.get(k);
        if (c) c.push(copy);
        else copies.set(k, [copy]);
      });
      const done = () => unregister(keys, hooks);
      running.then(done, done);
    },
    /** Whether a copy of `w`'s pass consumed before it is still running. */
    earlier: (w: Webhook): boolean => {
      const c = copies.get(passKey(w));
      return c !== undefined && c[0]!.w !== w;
    },
    /** Settles when the oldest running copy of `w`'s pass has run (its batch's lanes, handed-off ones too). */
    oldestRun: (w: Webhook): Promise<unknown> => copies.get(passKey(w))?.[0]?.running ?? Promise.resolve(),
  };
};
