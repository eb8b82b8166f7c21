import type { Webhook } from '../domain/webhook';
import { passKey } from './recent-outcomes';

/**
 * The copies of each pass (passKey) a deliverer is running, oldest first. A partition fetched
 * again while its earlier batch still runs, or a retry enqueued twice, puts two copies of one
 * pass in a worker at once; only the oldest may be leased (known-passes.ts, pinCopy).
 */
export const createRunningCopies = () => {
  const copies = new Map<string, Webhook[]>();
  const runs = new WeakMap<Webhook, Promise<unknown>>();
  return {
    register(hooks: readonly Webhook[]): void {
      for (const w of hooks) {
        const k = passKey(w);
        const c = copies.get(k);
        if (c) c.push(w);
        else copies.set(k, [w]);
      }
    },
    /** `hooks` run until `running` settles (every lane of their batch, handed-off ones too). */
    track(hooks: readonly Webhook[], running: Promise<unknown>): void {
      this.register(hooks);
      for (const w of hooks) runs.set(w, running);
      const done = () => this.unregister(hooks);
      running.then(done, done);
    },
    unregister(hooks: readonly Webhook[]): void {
      for (const w of hooks) {
        const k = passKey(w);
        const c = copies.get(k)?.filter((x) => x !== w);
        if (c?.length) copies.set(k, c);
        else copies.delete(k);
      }
    },
    /** Whether a copy of `w`'s pass consumed before it is still running. */
    earlier: (w: Webhook): boolean => {
      const c = copies.get(passKey(w));
      return c !== undefined && c[0] !== w;
    },
    /** Settles when the oldest running copy of `w`'s pass has run (its batch's lanes, handed-off ones too). */
    oldestRun: (w: Webhook): Promise<unknown> => {
      const first = copies.get(passKey(w))?.[0];
      return (first && runs.get(first)) ?? Promise.resolve();
    },
  };
};
