import type { ChainableCommander } from 'ioredis';
import { UnavailableError, errorMessage } from '../../core/errors/errors';

// Redis failures as the rest of Howk sees them: an unreachable or stuck Redis becomes
// UnavailableError (the caller may retry later, the API answers 503); an error reply
// (wrong type, a script bug) is a defect and stays what it is.

/**
 * Told of every Redis failure (not an error reply): the process's error counter. One per
 * process, set by the host that exports metrics (workers/node/main.ts).
 */
let onFailure: ((op: string) => void) | undefined;
export const onRedisFailure = (fn: ((op: string) => void) | undefined): void => {
  onFailure = fn;
};

export const toHowkError = (err: unknown): Error => {
  if (err instanceof Error && err.name === 'ReplyError') return err;
  onFailure?.('command');
  const wrapped = new UnavailableError(`redis: ${errorMessage(err)}`);
  (wrapped as Error).cause = err;
  return wrapped;
};

/** Runs a pipeline (one round trip) and returns its replies, throwing the first error. */
export const execPipeline = async (p: ChainableCommander): Promise<unknown[]> => {
  let replies: [Error | null, unknown][] | null;
  try {
    replies = await p.exec();
  } catch (err) {
    throw toHowkError(err);
  }
  if (!replies) throw new UnavailableError('redis: pipeline discarded');
  return replies.map(([err, value]) => {
    if (err) throw toHowkError(err);
    return value;
  });
};

/** Runs one command (one round trip) with the same error mapping. */
export const call = async <T>(run: () => Promise<T>): Promise<T> => {
  try {
    return await run();
  } catch (err) {
    throw toHowkError(err);
  }
};
