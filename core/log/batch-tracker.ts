// The bookkeeping of pipelined consumption, shared by the Kafka adapter and the memory log
// (core/ports/log.ts has the contract). Batches of a partition are taken in offset order and
// their handlers run side by side; a partition's offsets advance only past a prefix of
// batches that have all resolved, so a later batch that finishes first waits for the earlier
// ones, and a batch that rejects sends the partition back to its first offset.

/** How long a stopping consumer waits for the batches still in flight before it leaves. */
export const IN_FLIGHT_STOP_WAIT_MS = 4000;

/** Longest a consumer holds its next fetch for busy batches (ConsumerOptions.maxHoldMs). */
export const DEFAULT_MAX_HOLD_MS = 100;

/** A consumer without an explicit bound (ConsumerOptions.maxUnresolved). */
export const DEFAULT_MAX_UNRESOLVED = 2000;

/** A batch taken: [first, next) of its partition. `live`: its outcome still moves the partition's offset. */
type TrackedBatch = { first: bigint; next: bigint; count: number; done: boolean; live: boolean; resolvedAt: number };

/** A resolved batch a commit covers: its record count and when its handler resolved (ms). */
export type CommittedBatch = { count: number; resolvedAt: number };
/**
 * `doubtUntil`: records below it may have been consumed before, by another owner (see take);
 * `floor`: true while it is only maxUnresolved past the first record (the log told neither a
 * high-water mark nor an end yet). `end`: where the partition ended when it was assigned, once
 * known (see bound).
 */
type PartitionState = { topic: string; partition: number; queue: TrackedBatch[]; position: bigint; doubtUntil: bigint; floor: boolean; end?: bigint };

export type TrackerHooks = {
  /** Every batch up to `offset` (exclusive) has resolved: the partition may commit it. `batches`: the ones this commit newly covers. */
  commit(topic: string, partition: number, offset: bigint, batches: CommittedBatch[]): void;
  /** A batch rejected: consume the partition again from `offset`. Nothing after it commits. */
  rewind(topic: string, partition: number, offset: bigint, error: unknown): void;
  /** Any batch settled (room may have opened; the consumer may be idle). */
  settled?(): void;
};

const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;

const onResolved = (parts: Map<string, PartitionState>, hooks: TrackerHooks, s: PartitionState, e: TrackedBatch) => {
  if (!e.live || parts.get(keyOf(s.topic, s.partition)) !== s) return;
  e.done = true;
  e.resolvedAt = Date.now();
  let to: bigint | undefined;
  const covered: CommittedBatch[] = [];
  while (s.queue[0]?.done) {
    const d = s.queue.shift()!;
    to = d.next;
    covered.push({ count: d.count, resolvedAt: d.resolvedAt });
  }
  if (to !== undefined) hooks.commit(s.topic, s.partition, to, covered);
};

const onRejected = (parts: Map<string, PartitionState>, hooks: TrackerHooks, s: PartitionState, e: TrackedBatch, error: unknown) => {
  if (!e.live || parts.get(keyOf(s.topic, s.partition)) !== s) return;
  // The batch and every later one of the partition: their outcomes no longer move the offset
  // (they may still deliver; the rewind delivers them again: at-least-once).
  const i = s.queue.indexOf(e);
  for (const dropped of s.queue.splice(i)) dropped.live = false;
  s.position = e.first;
  hooks.rewind(s.topic, s.partition, e.first, error);
};

const latest = (a: bigint, ...more: (bigint | undefined)[]): bigint => more.reduce<bigint>((m, x) => (x !== undefined && x > m ? x : m), a);

/**
 * A partition this consumer was just given (a new assignment, a restart after a crash), at its
 * first batch: its last owner may have handled records past the committed offset without
 * committing them. Not only maxUnresolved of them: a head batch that stays unresolved keeps
 * every later one resolved and uncommitted, without bound. The high-water mark bounds them (the
 * last owner could read nothing past it, and it only grows), as does the end read at the
 * assignment; maxUnresolved is the window only for a log that tells neither (memory, SQLite),
 * until it does. Records past both were produced once the last owner had stopped fetching:
 * looking them up found nothing and cost a round trip per batch.
 */
const firstTaken = (topic: string, partition: number, first: bigint, maxUnresolved: number, high?: bigint, end?: bigint): PartitionState => {
  const floor = high === undefined && end === undefined;
  const doubtUntil = floor ? first + BigInt(maxUnresolved) : latest(first, high, end);
  return { topic, partition, queue: [], position: first, doubtUntil, floor, end };
};

export const createBatchTracker = (maxUnresolved: number, hooks: TrackerHooks) => {
  const parts = new Map<string, PartitionState>();
  /** Log-end offsets read when the partitions were assigned (see `bound`), for those not taken yet. */
  const ends = new Map<string, bigint>();
  let unresolved = 0;
  let running = 0;
  /** Batches taken and neither released nor settled (what maxBatchesInFlight counts). */
  let busy = 0;
  let waiters: (() => void)[] = [];

  const notify = () => {
    const ws = waiters;
    waiters = [];
    for (const w of ws) w();
    hooks.settled?.();
  };

  return {
    /** Where the partition's next batch starts (after the last batch taken), if it is tracked. */
    position: (topic: string, partition: number): bigint | undefined => parts.get(keyOf(topic, partition))?.position,

    /** Records taken and not yet settled, orphaned batches (rewound, revoked) included. */
    unresolved: () => unresolved,

    hasRoom: () => unresolved < maxUnresolved,

    /** Resolves once the records in flight are under the bound. */
    room: (): Promise<void> => (unresolved < maxUnresolved ? Promise.resolve() : new Promise((r) => waiters.push(r))),

    /** Batches taken and neither released by their handler nor settled. */
    busy: () => busy,

    /** Resolves once fewer than `n` batches are busy. */
    fewerBusyThan: async (n: number): Promise<void> => {
      while (busy >= n) await new Promise<void>((r) => waiters.push(r));
    },

    /** Resolves once no batch is in flight. */
    idle: async (): Promise<void> => {
      while (running > 0) await new Promise<void>((r) => waiters.push(r));
    },

    /**
     * Takes the batch [first, next) of a partition (`count` records) and starts `run` at once,
     * synchronously, so that handlers start in the order batches are taken. `run` is given the
     * batch's release (see ConsumedBatch.release), whether the batch may have been consumed
     * before by another owner (ConsumedBatch.maybeSeen), whether it starts at or past where
     * the partition ended when it was assigned (ConsumedBatch.afterAssignment, see bound), and
     * whether it is lost (ConsumedBatch.lost). `high`: the partition's high-water mark as
     * fetched with the batch, when the log tells it (Kafka).
     */
    take(
      topic: string,
      partition: number,
      first: bigint,
      next: bigint,
      count: number,
      run: (release: () => void, maybeSeen: boolean, afterAssignment: boolean, lost: () => boolean) => Promise<void>,
      high?: bigint,
    ): void {
      const k = keyOf(topic, partition);
      let s = parts.get(k);
      if (!s) parts.set(k, (s = firstTaken(topic, partition, first, maxUnresolved, high, ends.get(k))));
      const e: TrackedBatch = { first, next, count, done: false, live: true, resolvedAt: 0 };
      s.queue.push(e);
      s.position = next;
      unresolved += count;
      running++;
      busy++;
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        busy--;
        notify();
      };
      const state = s;
      let p: Promise<void>;
      try {
        // Lost: the partition went to another owner (or was rewound, or the consumer stopped): nothing of the batch commits here any more.
        p = run(release, first < state.doubtUntil, state.end !== undefined && first >= state.end, () => !e.live);
      } catch (err) {
        p = Promise.reject(err);
      }
      p.then(
        () => onResolved(parts, hooks, state, e),
        (err: unknown) => onRejected(parts, hooks, state, e, err),
      ).finally(() => {
        unresolved -= count;
        running--;
        if (!released) {
          released = true;
          busy--;
        }
        notify();
      });
    },

    /**
     * A new assignment: partitions not kept lose their state (their batches in flight no
     * longer commit). Returns the kept partitions with their positions.
     */
    reassign(keep: (topic: string, partition: number) => boolean): { topic: string; partition: number; position: bigint }[] {
      ends.clear(); // read for the assignment before: `bound` is told again for this one
      const kept: { topic: string; partition: number; position: bigint }[] = [];
      for (const [k, s] of parts) {
        if (keep(s.topic, s.partition)) {
          kept.push({ topic: s.topic, partition: s.partition, position: s.position });
          continue;
        }
        for (const e of s.queue) e.live = false;
        parts.delete(k);
      }
      return kept;
    },

    /**
     * The partition's log-end offset, read once it was assigned to this consumer. Its last owner
     * gave it up before that (a member rejoins only once it has stopped fetching), so it cannot
     * have taken a record at or past it: batches from there on are `afterAssignment`. Only for
     * the current assignment (`reassign` forgets those not taken yet); an offset read later is
     * only higher, so a late one never claims too much.
     */
    bound(topic: string, partition: number, end: bigint): void {
      const k = keyOf(topic, partition);
      const s = parts.get(k);
      if (!s) return void ends.set(k, end);
      if (s.end === undefined || end < s.end) s.end = end;
      // Records below the end may be the last owner's, however many; past it none is (see take).
      if (s.floor || end > s.doubtUntil) s.doubtUntil = end;
      s.floor = false;
    },

    /** Forgets every partition (a stopped consumer): later settlements commit nothing. */
    clear(): void {
      ends.clear();
      for (const s of parts.values()) for (const e of s.queue) e.live = false;
      parts.clear();
    },
  };
};

export type BatchTracker = ReturnType<typeof createBatchTracker>;
