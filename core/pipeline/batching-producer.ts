import type { LogProducer, LogRecord } from '../ports/log';

// Concurrent enqueues become one Kafka produce: records wait up to `lingerMs` (or until
// `maxRecords`) and every caller learns the fate of the produce that carried its records.
// A send that comes after a quiet spell (none in the last `lingerMs`) leaves once the current
// tick is over instead: at a light load (100 single enqueues/s arrive 10 ms apart) no other
// send would come within the linger, so waiting for one only added the linger to every
// webhook's latency. Sends close together still wait for each other.
export const batchingProducer = (inner: LogProducer, lingerMs: number, maxRecords = 2000): LogProducer => {
  let buf: LogRecord[] = [];
  let waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const inFlight = new Set<Promise<void>>();
  let lastSendAt = -Infinity;

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
        const now = Date.now();
        const quiet = now - lastSendAt >= lingerMs;
        lastSendAt = now;
        buf.push(...records);
        waiters.push({ resolve, reject });
        if (buf.length >= maxRecords || lingerMs <= 0) flush();
        else if (quiet && buf.length === records.length) queueMicrotask(flush);
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
