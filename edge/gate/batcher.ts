import type { RestAck, RestRecord } from '../upstash/kafka';

// Micro-batching of produces inside a DomainGate: the records of concurrent requests share
// one REST produce. While fewer than `maxInFlight` produces are on the wire, records go at
// once (a lone enqueue waits for nothing); past that they gather until a produce returns,
// `maxRecords` are waiting, or the timer `arm` set (the linger) fires, whichever comes
// first. One request's records always travel in the same produce, so a request is accepted
// or refused whole.

export type Flushed = { acks: RestAck[]; /** how long the produce that carried them took */ produceMs: number };
type Waiter = { records: RestRecord[]; resolve: (f: Flushed) => void; reject: (e: unknown) => void };

export type BatcherOptions = {
  maxRecords: number;
  produce: (records: RestRecord[]) => Promise<RestAck[]>;
  /** Asks for a flush a few ms from now (the gate sets its timer). */
  arm: () => void;
  /** Produces on the wire before records wait for one to return (0: always wait for `arm`). */
  maxInFlight?: number;
  onFlush?: (records: number, ok: boolean) => void;
};

export class MicroBatcher {
  private waiting: Waiter[] = [];
  private count = 0;
  private inFlight = 0;
  private soon = false;

  constructor(private readonly o: BatcherOptions) {}

  get buffered(): number {
    return this.count;
  }

  /** Resolves with the records' acks once the produce that carried them is acknowledged. */
  add(records: RestRecord[]): Promise<Flushed> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ records, resolve, reject });
      this.count += records.length;
      if (this.count >= this.o.maxRecords) this.flush();
      else if (this.inFlight < (this.o.maxInFlight ?? 0)) this.flushSoon();
      else this.o.arm();
    });
  }

  /** At the end of this turn: the records of requests handled in the same turn share it. */
  private flushSoon(): void {
    if (this.soon) return;
    this.soon = true;
    queueMicrotask(() => {
      this.soon = false;
      if (this.count) this.flush();
    });
  }

  private settled(): void {
    this.inFlight--;
    if (this.count && this.inFlight < (this.o.maxInFlight ?? 0)) this.flush();
  }

  flush(): void {
    const ws = this.waiting;
    this.waiting = [];
    this.count = 0;
    if (!ws.length) return;
    const all = ws.flatMap((w) => w.records);
    const t0 = Date.now();
    this.inFlight++;
    this.o.produce(all).then(
      (acks) => {
        this.settled();
        const produceMs = Date.now() - t0;
        this.o.onFlush?.(all.length, true);
        let i = 0;
        for (const w of ws) {
          w.resolve({ acks: acks.slice(i, i + w.records.length), produceMs });
          i += w.records.length;
        }
      },
      (e) => {
        this.settled();
        this.o.onFlush?.(all.length, false);
        for (const w of ws) w.reject(e);
      },
    );
  }
}
