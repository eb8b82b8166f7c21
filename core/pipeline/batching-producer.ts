import { createBatcher } from '../domain/batcher';
import type { LogProducer, LogRecord } from '../ports/log';

// Concurrent enqueues become one Kafka produce: records wait up to `lingerMs` (or until
// `maxRecords`) and every caller learns the fate of the produce that carried its records.
export const batchingProducer = (inner: LogProducer, lingerMs: number, maxRecords = 2000): LogProducer => {
  const batcher = createBatcher<LogRecord[], void>({
    run: (sends) => inner.send(sends.length === 1 ? sends[0]! : sends.flat()),
    start: lingerMs > 0 ? { lingerMs } : 'now',
    maxInFlight: Infinity,
    weight: (records) => records.length,
    fullAt: maxRecords,
  });
  return {
    send: (records) => (records.length ? batcher.add(records).then(() => undefined) : Promise.resolve()),
    async close() {
      batcher.flush();
      await batcher.idle();
      await inner.close();
    },
  };
};
