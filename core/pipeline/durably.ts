import { retryUntil } from '../domain/retry-until';
import { errorMessage } from '../errors/errors';
import type { Logger } from '../ports/logger';

/** Retries an outcome write until it is durable (Kafka or Redis briefly away), unless stopping. */
export const durablyWith =
  (log: Logger, stopping: () => boolean) =>
  async (what: string, fn: () => Promise<unknown>): Promise<void> => {
    // Capped at 1 s: once the log or Redis is back, the outcomes land before the group has
    // settled and a new owner of the partition looks them up (known-passes.ts).
    await retryUntil(fn, {
      baseMs: 200,
      capMs: 1000,
      retryIf: () => !stopping(),
      onRetry: (e) => log.warn(`${what} failed; retrying before the batch commits`, { error: errorMessage(e) }),
    });
  };
