import { createBatcher, type Batcher } from '../../core/domain/batcher';
import type { KafkaRestAck, KafkaRestRecord } from '../../core/ports/kafka-rest';

// Micro-batching of produces inside a DomainGate: the records of concurrent requests share
// one REST produce. While fewer than `maxInFlight` produces are on the wire, records go at
// once (a lone enqueue waits for nothing); past that they gather until a produce returns,
// `maxRecords` are waiting, or the timer `arm` set (the linger) fires, whichever comes
// first. One request's records always travel in the same produce, so a request is accepted
// or refused whole.

export type Flushed = { acks: KafkaRestAck[]; /** how long the produce that carried them took */ produceMs: number };
export type GateBatcherOptions = {
  maxRecords: number;
  produce: (records: KafkaRestRecord[]) => Promise<KafkaRestAck[]>;
  /** Asks for a flush a few ms from now (the gate sets its timer). */
  arm: () => void;
  /** Produces on the wire before records wait for one to return (0: always wait for `arm`). */
  maxInFlight?: number;
  onFlush?: (records: number, ok: boolean) => void;
};

export class MicroBatcher {
  private readonly batcher: Batcher<KafkaRestRecord[], Flushed>;

  constructor(o: GateBatcherOptions) {
    this.batcher = createBatcher<KafkaRestRecord[], Flushed>({
      start: 'microtask',
      maxInFlight: o.maxInFlight ?? 0,
      weight: (records) => records.length,
      fullAt: o.maxRecords,
      whenBusy: o.arm,
      run: async (requests) => {
        const all = requests.length === 1 ? requests[0]! : requests.flat();
        const t0 = Date.now();
        try {
          const acks = await o.produce(all);
          o.onFlush?.(all.length, true);
          return { acks, produceMs: Date.now() - t0 };
        } catch (e) {
          o.onFlush?.(all.length, false);
          throw e;
        }
      },
    });
  }

  get buffered(): number {
    return this.batcher.waiting;
  }

  /** Resolves with the records' acks once the produce that carried them is acknowledged. */
  async add(records: KafkaRestRecord[]): Promise<Flushed> {
    const { result, offset } = await this.batcher.add(records);
    return { acks: result.acks.slice(offset, offset + records.length), produceMs: result.produceMs };
  }

  flush(): void {
    this.batcher.flush();
  }
}
