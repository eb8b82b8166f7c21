import type { FirstOutcome, OutcomeBus } from '../ports/outcome-bus';

/** The outcome bus of one process (howk-dev, and fleets whose api and worker share a process). */
export const memoryOutcomeBus = (): OutcomeBus => {
  const subs = new Map<string, Set<(o: FirstOutcome[]) => void>>();
  return {
    async publish(listener, outcomes) {
      for (const on of subs.get(listener) ?? []) queueMicrotask(() => on(outcomes));
    },
    async subscribe(listener, on) {
      let set = subs.get(listener);
      if (!set) subs.set(listener, (set = new Set()));
      set.add(on);
      return {
        close: async () => {
          set.delete(on);
          if (!set.size) subs.delete(listener);
        },
      };
    },
  };
};
