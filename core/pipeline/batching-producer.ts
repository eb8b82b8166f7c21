import { createBatcher } from '../domain/batcher';
import type { LogProducer, LogRecord } from '../ports/log';

// Concurrent enqueues become one Kafka produce: records wait up to `lingerMs` (or until
// `maxRecords`) and every caller learns the fate of the produce that carried its records.
//
// Without a linger, `endOfTurn` (the host's "after this turn of the event loop": Node's
// setImmediate) gathers the enqueues whose requests were read in the same turn, with no timer
// and no wait: a lone enqueue at a light load leaves at once, where a linger held every one of
// them for its whole length and woke the process once more per enqueue. A producer that
// merges the sends of a tick (`mergesTick`: KafkaLog's) gets them one call each, in one go: it
// makes them one request, and when the broker refuses it (a record over its size limit)
// resends each caller's records on its own, so only the caller whose records were refused
// fails. Any other gets one call for the turn (SQLite: one transaction).
export const batchingProducer = (inner: LogProducer, lingerMs: number, maxRecords = 2000, endOfTurn?: (fire: () => void) => void): LogProducer => {
  const perCaller = lingerMs <= 0 && endOfTurn !== undefined && inner.mergesTick === true;
  const batcher = createBatcher<LogRecord[], unknown[]>({
    run: perCaller
      ? (sends) => Promise.all(sends.map((s) => inner.send(s).then(noError, (e: unknown) => e ?? new Error('produce failed'))))
      : (sends) => inner.send(sends.length === 1 ? sends[0]! : sends.flat()).then(() => []),
    start: lingerMs > 0 ? { lingerMs } : endOfTurn ? { defer: endOfTurn } : 'now',
    maxInFlight: Infinity,
    weight: (records) => records.length,
    fullAt: maxRecords,
  });
  return {
    send: (records) =>
      records.length
        ? batcher.add(records).then(({ result, index }) => {
            if (result[index] !== undefined) throw result[index];
          })
        : Promise.resolve(),
    async close() {
      batcher.flush();
      await batcher.idle();
      await inner.close();
    },
  };
};

const noError = (): undefined => undefined;
