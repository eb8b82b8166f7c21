import { createBatcher, type BatchStart } from '../domain/batcher';

// Calls made in the same tick share one underlying batch call (one Redis round trip for
// every admission a batch asks for at once, however the calls are spread over the code),
// and calls made while that round trip is out wait for it and then share the next one. A
// pipelined worker asks for one or two admissions per batch; without the second rule each
// became a script call of its own, and the worker's Redis calls per webhook grew tenfold.
// `start`: when the first call of a tick leaves; a host's end of the turn (Node's
// setImmediate) instead of a timer (at least 1 ms) takes that millisecond out of every
// delivery's path at a light load, and still gathers whatever the same turn asked for.
export const coalesce = <T, R>(run: (items: T[]) => Promise<R[]>, start: BatchStart = 'macrotask') => {
  const batcher = createBatcher<T, R[]>({ run, start });
  return (item: T): Promise<R> => batcher.add(item).then(({ result, index }) => result[index]!);
};

/**
 * coalesce for calls whose callers wait for no answer (fire and forget): the same batching.
 * `settled` gets each call's items once it has succeeded or failed, with what the call
 * resolved to or (`failed`) its error; `idle` resolves once nothing waits and no call is out.
 */
export const coalesceSends = <T>(run: (items: T[]) => Promise<unknown>, settled: (items: T[], failed: boolean, outcome?: unknown) => void, start: BatchStart = 'macrotask') => {
  const batcher = createBatcher<T, unknown>({
    start,
    run: (items) => {
      let call: Promise<unknown>;
      try {
        call = run(items);
      } catch (e) {
        call = Promise.reject(e);
      }
      return call.then(
        (v) => (settled(items, false, v), v),
        (e: unknown) => {
          settled(items, true, e);
          throw e;
        },
      );
    },
  });
  return {
    add(item: T): void {
      // Its outcome went to `settled`.
      batcher.add(item).catch(() => undefined);
    },
    idle: (): Promise<unknown> => batcher.idle(),
  };
};
