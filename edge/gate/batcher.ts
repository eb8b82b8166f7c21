import type { RestAck, RestRecord } from '../upstash/kafka';

// Micro-batching of produces inside a DomainGate: the records of concurrent requests share
// one REST produce. A flush happens when `maxRecords` are waiting, or when the gate's alarm
// (`arm`, a few ms ahead) fires. One request's records always travel in the same produce,
// so a request is accepted or refused whole.

type Waiter = { records: RestRecord[]; resolve: (acks: RestAck[]) => void; reject: (e: unknown) => void };

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
  add(records: RestRecord[]): Promise<RestAck[]> {
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
    this.o.produce(all).then(
      (acks) => {
        this.o.onFlush?.(all.length, true);
        let i = 0;
        for (const w of ws) {
          w.resolve(acks.slice(i, i + w.records.length));
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
