import type { LogProducer, LogRecord } from '../ports/log';

// Concurrent enqueues become one Kafka produce: records wait up to `lingerMs` (or until
// `maxRecords`) and every caller learns the fate of the produce that carried its records.
export const batchingProducer = (inner: LogProducer, lingerMs: number, maxRecords = 2000): LogProducer => {
  let buf: LogRecord[] = [];
  let waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const inFlight = new Set<Promise<void>>();

  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const records = buf;
    const ws = waiters;
    buf = [];
    waiters = [];
    if (!records.length) return;
    const p = inner.send(records).then(
      () => ws.forEach((w) => w.resolve()),
      (e) => ws.forEach((w) => w.reject(e)),
    );
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };

  return {
    send(records) {
      if (!records.length) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        buf.push(...records);
        waiters.push({ resolve, reject });
        if (buf.length >= maxRecords || lingerMs <= 0) flush();
        else timer ??= setTimeout(flush, lingerMs);
      });
    },
    async close() {
      flush();
      await Promise.allSettled([...inFlight]);
      await inner.close();
    },
  };
};
