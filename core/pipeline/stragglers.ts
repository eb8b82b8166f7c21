import type { Config } from '../config/schema';
import type { Clock } from '../ports/clock';

export type StragglerDeps = {
  clock: Clock;
  delivery: Pick<Config['delivery'], 'straggler_after' | 'batch_time_limit'>;
  /** When each config's lane last finished a step, in any batch. */
  moved: ReadonlyMap<string, number>;
};

/**
 * Resolves true once the batch has stragglers: a lane that has not moved for
 * straggler_after (a slow delivery, an admission that waits, or the tail of an earlier
 * batch it queues behind), or the batch still running after batch_time_limit. False when
 * every lane is done first. Lanes that keep finishing steps are not stragglers (a lease,
 * snapshot and ack each for webhooks queued behind fast ones cost a quarter of the CPU).
 */
export const stragglers = async (d: StragglerDeps, all: Promise<void>, progress: Map<string, number>): Promise<boolean> => {
  const { straggler_after, batch_time_limit } = d.delivery;
  const done = all.then(() => false);
  let doneTrue: Promise<boolean> | undefined; // made when first raced: a failed batch then rejects only where awaited
  const deadline = d.clock.now() + Math.max(straggler_after, batch_time_limit);
  for (;;) {
    const now = d.clock.now();
    if (!progress.size) return done;
    let next = deadline;
    for (const [key, started] of progress) next = Math.min(next, Math.max(started, d.moved.get(key) ?? 0) + straggler_after);
    if (now >= next) return true;
    // Checked again when the earliest lane would become a straggler (or the limit is reached); cleared once the batch is done.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const woke = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, Math.max(1, next - now), false)));
    const finished = await Promise.race([(doneTrue ??= done.then(() => true)), woke]);
    clearTimeout(timer);
    if (!finished) continue;
    return false;
  }
};
