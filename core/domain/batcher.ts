// The one batcher: callers add items one at a time, and the items waiting together leave in
// one call of `run` (one Kafka produce, one Redis round trip, one REST produce). What differs
// between the places that batch is only when a batch leaves and how many may be out at once:
//
// - `start`: when a batch leaves once an item waits and a call may go out: at once, after the
//   current microtasks (the callers a single event resumed share it), after the current
//   macrotask (or the host's own end of a turn), or after a linger of some milliseconds;
// - `maxInFlight`: calls out at once. Items added while that many are out wait, and leave
//   together the moment one returns (how a busy writer gathers its callers without a timer);
// - `maxWeight`: the most one call carries (by `weight`, at least one item); the rest waits;
// - `fullAt`: once this much waits, everything waiting leaves at once, past the in-flight cap
//   and before the start (a linger never holds a full batch);
// - `whenBusy`: called when an item has to wait for a call to return, for an owner that sets its
//   own timer and calls `flush()` (a Durable Object's linger).
//
// Every caller learns the fate of the call that carried its item: its promise resolves with
// that call's result and the item's place in the batch, or rejects with the call's error.

export type BatchStart =
  | 'now'
  | 'microtask'
  | 'macrotask'
  | { lingerMs: number }
  /** The host's own "after this turn" (Node's setImmediate: after the I/O of this turn, before timers). */
  | { defer: (fire: () => void) => void };

export type BatcherOptions<T, R> = {
  run: (items: T[]) => Promise<R>;
  start: BatchStart;
  /** Calls out at once (default 1); Infinity: never wait for one to return. */
  maxInFlight?: number;
  /** The most one call carries, by `weight` (default: no limit). */
  maxWeight?: number;
  /** An item's share of maxWeight (default 1). */
  weight?: (item: T) => number;
  /** Once this much weight waits, it all leaves at once, whatever is out. */
  fullAt?: number;
  whenBusy?: () => void;
};

/** What an item's caller gets: the result of the call that carried it, and where it sat in that call. */
export type Batched<T, R> = { result: R; items: readonly T[]; index: number; /** the weight of the items before it */ offset: number };

export type Batcher<T, R> = {
  add(item: T): Promise<Batched<T, R>>;
  /** Takes a waiting item back (true), or says it has left already (false). */
  withdraw(item: T): boolean;
  /** Sends everything waiting now, whatever is out (a linger's owner, a close). */
  flush(): void;
  /** Resolves once nothing waits and no call is out. */
  idle(): Promise<void>;
  /** The weight waiting. */
  readonly waiting: number;
};

type Waiter<T, R> = { item: T; weight: number; resolve: (b: Batched<T, R>) => void; reject: (e: unknown) => void };

class QueueBatcher<T, R> implements Batcher<T, R> {
  private queue: Waiter<T, R>[] = [];
  private weightWaiting = 0;
  private inFlight = 0;
  private scheduled = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private idlers: (() => void)[] = [];
  private readonly maxInFlight: number;
  private readonly maxWeight: number;

  constructor(private readonly o: BatcherOptions<T, R>) {
    this.maxInFlight = o.maxInFlight ?? 1;
    this.maxWeight = o.maxWeight ?? Infinity;
  }

  get waiting(): number {
    return this.weightWaiting;
  }

  add(item: T): Promise<Batched<T, R>> {
    return new Promise<Batched<T, R>>((resolve, reject) => {
      const weight = this.o.weight ? this.o.weight(item) : 1;
      this.queue.push({ item, weight, resolve, reject });
      this.weightWaiting += weight;
      this.pump();
    });
  }

  withdraw(item: T): boolean {
    const i = this.queue.findIndex((w) => w.item === item);
    if (i < 0) return false;
    this.weightWaiting -= this.queue[i]!.weight;
    this.queue.splice(i, 1);
    this.settleIdle();
    return true;
  }

  flush(): void {
    this.cancel();
    while (this.queue.length) this.send();
  }

  idle(): Promise<void> {
    if (!this.queue.length && !this.inFlight) return Promise.resolve();
    return new Promise<void>((r) => this.idlers.push(r));
  }

  /** After an add: full batches leave, the rest waits for its start or for a call to return. */
  private pump(): void {
    if (this.o.fullAt !== undefined && this.weightWaiting >= this.o.fullAt) {
      this.cancel();
      while (this.queue.length) this.send();
    }
    if (!this.queue.length) return;
    if (this.inFlight < this.maxInFlight) this.schedule();
    else this.o.whenBusy?.();
  }

  private schedule(): void {
    if (this.scheduled) return;
    const s = this.o.start;
    if (s === 'now') return this.fire();
    this.scheduled = true;
    if (s === 'microtask') queueMicrotask(() => this.fire());
    else if (s === 'macrotask') this.timer = setTimeout(() => this.fire(), 0);
    else if ('defer' in s) s.defer(() => this.fire());
    else this.timer = setTimeout(() => this.fire(), s.lingerMs);
  }

  private cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.scheduled = false;
    this.timer = undefined;
  }

  private fire(): void {
    this.scheduled = false;
    this.timer = undefined;
    if (this.queue.length && this.inFlight < this.maxInFlight) this.send();
    this.settleIdle();
  }

  /** One call with the items at the head of the queue, up to maxWeight (at least one). */
  private send(): void {
    let n = 0;
    let weight = 0;
    while (n < this.queue.length && (n === 0 || weight + this.queue[n]!.weight <= this.maxWeight)) weight += this.queue[n++]!.weight;
    const taken = this.queue.slice(0, n);
    this.queue = this.queue.slice(n);
    this.weightWaiting -= weight;
    this.inFlight++;
    const items = taken.map((w) => w.item);
    let call: Promise<R>;
    try {
      call = this.o.run(items);
    } catch (e) {
      call = Promise.reject(e);
    }
    call.then(
      (result) => {
        this.returned();
        let offset = 0;
        taken.forEach((w, index) => {
          w.resolve({ result, items, index, offset });
          offset += w.weight;
        });
      },
      (e: unknown) => {
        this.returned();
        for (const w of taken) w.reject(e);
      },
    );
  }

  /** A call came back: what waited for it leaves now. */
  private returned(): void {
    this.inFlight--;
    if (this.queue.length && this.inFlight < this.maxInFlight) this.send();
    this.settleIdle();
  }

  private settleIdle(): void {
    if (this.queue.length || this.inFlight) return;
    const ws = this.idlers;
    this.idlers = [];
    for (const w of ws) w();
  }
}

export const createBatcher = <T, R>(o: BatcherOptions<T, R>): Batcher<T, R> => new QueueBatcher(o);
