import type { RestAck, RestRecord } from '../upstash/kafka';

// Micro-batching of produces inside a DomainGate: the records of concurrent requests share
// one REST produce. A flush happens when `maxRecords` are waiting, or when the gate's alarm
// (`arm`, a few ms ahead) fires. One request's records always travel in the same produce,
// so a request is accepted or refused whole.

export type Flushed = { acks: RestAck[]; /** how long the produce that carried them took */ produceMs: number };
type Waiter = { records: RestRecord[]; resolve: (f: Flushed) => void; reject: (e: unknown) => void };

export type BatcherOptions = {
  maxRecords: number;
  produce: (records: RestRecord[]) => Promise<RestAck[]>;
  /** Asks for a flush a few ms from now (the gate sets its alarm). */
  arm: () => void;
  onFlush?: (records: number, ok: boolean) => void;
};

export class MicroBatcher {
  private waiting: Waiter[] = [];
  private count = 0;

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
      else this.o.arm();
    });
  }

  flush(): void {
    const ws = this.waiting;
    this.waiting = [];
    this.count = 0;
    if (!ws.length) return;
    const all = ws.flatMap((w) => w.records);
    const t0 = Date.now();
    this.o.produce(all).then(
      (acks) => {
        const produceMs = Date.now() - t0;
        this.o.onFlush?.(all.length, true);
        let i = 0;
        for (const w of ws) {
          w.resolve({ acks: acks.slice(i, i + w.records.length), produceMs });
          i += w.records.length;
        }
      },
      (e) => {
        this.o.onFlush?.(all.length, false);
        for (const w of ws) w.reject(e);
      },
    );
  }
}
