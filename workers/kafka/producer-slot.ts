import type { Producer } from 'kafkajs';

// The kafkajs producer behind one LogProducer, connected at its first send.
//
// kafkajs 2.2.4 hands a failed request's sequence numbers back to the partition even when the
// broker wrote it (the answer was lost with the broker): the next batch then repeats them, and
// the new leader refuses every later write to that partition (out of order sequence number)
// or, at the same size, takes the batch for a duplicate and drops it. A failed send therefore
// retires an idempotent producer: the next send gets a new producer id. Retries inside one
// send (the same records) keep their numbers and stay deduplicated.
export class ProducerSlot {
  private current: Producer;
  private connected: Promise<void> | undefined;

  constructor(
    private readonly make: () => Producer,
    private readonly idempotent: boolean,
    /** Every producer alive, for the log's close(). */
    private readonly alive: Set<Producer>,
  ) {
    this.current = make();
    alive.add(this.current);
  }

  /** The producer to send with, connected. */
  async get(): Promise<Producer> {
    const p = this.current;
    this.connected ??= p.connect().catch((e: unknown) => {
      this.connected = undefined;
      throw e;
    });
    await this.connected;
    return p;
  }

  /** A send with `used` failed (or timed out): an idempotent producer is replaced. */
  failed(used: Producer | undefined): void {
    if (!this.idempotent || (used && used !== this.current)) return;
    const old = this.current;
    this.current = this.make();
    this.alive.add(this.current);
    this.connected = undefined;
    this.alive.delete(old);
    void old.disconnect().catch(() => {});
  }

  disconnect(): Promise<void> {
    this.alive.delete(this.current);
    return this.current.disconnect();
  }
}
