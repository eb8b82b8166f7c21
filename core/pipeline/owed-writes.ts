import { errorMessage } from '../errors/errors';
import type { HotBatch, HotWriter } from '../ports/hot-state';
import type { Logger } from '../ports/logger';

// Statuses, stats and ended marks a worker could not write while Redis did not answer
// (docs/RELIABILITY.md, "Redis unreachable: delivery degrades, it does not stop"). Their batch
// commits (its outcomes are on Kafka); the writes wait here, oldest first, and are written once
// Redis answers, so GET /webhooks/:id/status and the listings catch up. A status write is
// last-write-wins by its stamp: written late, it never replaces a newer one.

const RETRY_MS = 500;

/** The part of a write that may be owed: everything but retries (those hold their batch until written). */
const sizeOf = (b: HotBatch): number => (b.statuses?.length ?? 0) + (b.ended?.length ?? 0) + 1;

export const createOwedWrites = (hot: HotWriter, log: Logger, max: number) => {
  const queue: HotBatch[] = [];
  let size = 0;
  let dropped = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let flushing: Promise<void> | undefined;

  const flush = async (): Promise<void> => {
    while (queue.length) {
      const b = queue[0]!;
      try {
        await hot.apply(b);
      } catch (e) {
        log.debug('owed statuses not written yet', { error: errorMessage(e), owed: size });
        schedule();
        return;
      }
      if (queue[0] === b) {
        queue.shift();
        size -= sizeOf(b);
      }
    }
    if (dropped) log.warn('owed statuses written; some were dropped past degraded.max_owed_statuses', { dropped });
    else log.info('owed statuses written: Redis has the outcomes made while it was away');
    dropped = 0;
  };

  const schedule = (): void => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      flushing ??= flush().finally(() => (flushing = undefined));
    }, RETRY_MS);
  };

  return {
    /** Keeps a write that failed, to be written once Redis answers. */
    add(b: HotBatch, e: unknown): void {
      log.debug('status/stats owed: hot state unavailable', { error: errorMessage(e) });
      if (max <= 0) return;
      const owed: HotBatch = { ...b };
      delete owed.retries;
      queue.push(owed);
      size += sizeOf(owed);
      while (size > max && queue.length > 1) {
        const old = queue.shift()!;
        size -= sizeOf(old);
        dropped += old.statuses?.length ?? 0;
      }
      schedule();
    },
    /** Statuses and marks owed, for tests and logs. */
    size: (): number => size,
    /** One last try (a graceful stop); what Redis does not take then is left to Kafka. */
    stop: async (): Promise<void> => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      await flushing;
      if (!queue.length) return;
      try {
        for (const b of queue) await hot.apply(b);
      } catch (e) {
        log.warn('owed statuses not written before stopping', { error: errorMessage(e), owed: size });
      }
    },
  };
};
