import { createBatcher } from '../domain/batcher';
import type { LogProducer, LogRecord } from '../ports/log';

// Concurrent enqueues become one Kafka produce: records wait up to `lingerMs` (or until
// `maxRecords`) and every caller learns the fate of the produce that carried its records.
//
// Without a linger, `endOfTurn` (the host's "after this turn of the event loop": Node's
// setImmediate) gathers the enqueues whose requests were read in the same turn, with no timer
// and no wait: a lone enqueue at a light load leaves at once, where a linger held every one of
// them for its whole length and woke the process once more per enqueue. They are handed to
// `inner` one call each, in one go: a producer that merges the sends of a tick (KafkaLog's)
// makes them one request, and when the broker refuses it (a record over its size limit)
// resends each caller's records on its own, so only the caller whose records were refused fails.
export const batchingProducer = (inner: LogProducer, lingerMs: number, maxRecords = 2000, endOfTurn?: (fire: () => void) => void): LogProducer => {
  const perCaller = lingerMs <= 0 && endOfTurn !== undefined;
  const batcher = createBatcher<LogRecord[], unknown[]>({
    run: perCaller
      ? (sends) => Promise.all(sends.map((s) => inner.send(s).then(noError, (e: unknown) => e ?? new Error('produce failed'))))
      : (sends) => inner.send(sends.length === 1 ? sends[0]! : sends.flat()).then(() => []),
    start: lingerMs > 0 ? { lingerMs } : perCaller ? { defer: endOfTurn } : 'now',
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
