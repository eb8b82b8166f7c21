import { settleWithin } from '../domain/deadline';
import type { BatchHandler, ConsumerOptions, LogConsumer } from '../ports/log';
import { createBatchTracker, DEFAULT_MAX_HOLD_MS, DEFAULT_MAX_UNRESOLVED, IN_FLIGHT_STOP_WAIT_MS, type BatchTracker } from './batch-tracker';

/** A rejected batch's partition rests this long before it is taken again. */
const REWIND_PAUSE_MS = 100;

/**
 * A consumer group member of an in-process log (the memory log, the SQLite log): the polling
 * loop, membership (partition i goes to member i mod n), pause, stop and the pipelined
 * bookkeeping (core/log/batch-tracker.ts). A log says how to take what is there, how to wait
 * for more and where a commit goes.
 */
export abstract class PolledConsumer implements LogConsumer {
  private running = false;
  /** When the current hold (maxBatchesInFlight) began. */
  private holdSince: number | undefined;
  private paused = false;
  private stopped: Promise<void> | undefined;
  private loop: Promise<void> | undefined;
  /** Ends the current nap early (an append, a settled batch, a rebalance). */
  protected wake: (() => void) | undefined;
  private readonly restUntil = new Map<string, number>();
  protected readonly tracker: BatchTracker;

  constructor(
    private readonly members: PolledConsumer[],
    protected readonly opts: ConsumerOptions,
  ) {
    this.tracker = createBatchTracker(opts.maxUnresolved ?? DEFAULT_MAX_UNRESOLVED, {
      commit: (topic, partition, offset, batches) => {
        if (!this.members.includes(this) || !this.assigned(partition)) return;
        if (!this.commitTo(topic, partition, offset)) return;
        const now = Date.now();
        for (const b of batches) this.opts.onCommitted?.(b.count, now - b.resolvedAt);
      },
      // The tracker is now back at the batch's first offset: the loop takes it again after a rest.
      rewind: (topic, partition) => this.restUntil.set(`${topic}:${partition}`, Date.now() + REWIND_PAUSE_MS),
      settled: () => this.wake?.(),
    });
  }

  /** Records the group's offset; false when it could not (nothing then counts as committed). */
  protected abstract commitTo(topic: string, partition: number, offset: bigint): boolean;
  /** Waits up to `ms` for an append, setting `wake` meanwhile. */
  protected abstract nap(ms: number): Promise<void>;
  /** Takes every batch available now while there is room; true when it took any. */
  protected abstract takeAll(handler: BatchHandler): boolean;

  /** As many busy batches as ConsumerOptions.maxBatchesInFlight: the next take waits for one to be released or settle. */
  private holding(): boolean {
    const most = this.opts.maxBatchesInFlight;
    if (most === undefined || this.tracker.busy() < most) {
      this.holdSince = undefined;
      return false;
    }
    const now = Date.now();
    this.holdSince ??= now;
    if (now - this.holdSince < (this.opts.maxHoldMs ?? DEFAULT_MAX_HOLD_MS)) return true;
    this.holdSince = undefined;
    return false;
  }

  protected assigned(partition: number): boolean {
    return this.members[partition % this.members.length] === this;
  }

  protected resting(topic: string, partition: number, now: number): boolean {
    return (this.restUntil.get(`${topic}:${partition}`) ?? 0) > now;
  }

  /** Membership changed: partitions lost no longer commit; the new owner starts from the last commit. */
  rebalanced(): void {
    this.tracker.reassign((_topic, partition) => this.assigned(partition));
    this.wake?.();
  }

  async run(handler: BatchHandler): Promise<void> {
    this.running = true;
    this.members.push(this);
    for (const m of this.members) m.rebalanced();
    this.loop = (async () => {
      while (this.running) {
        let took = false;
        try {
          took = !this.paused && !this.holding() && this.takeAll(handler);
        } catch {
          // The store could not be read (or a start position written): look again shortly.
        }
        // Something taken: look again at once (a partition may have more than one batch).
        if (took) await new Promise((r) => setTimeout(r, 0));
        else await this.nap(this.paused ? 50 : 200);
      }
    })();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.wake?.();
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.running = false;
      this.wake?.();
      await this.loop;
      // Batches in flight may still finish and commit, within bounds.
      await settleWithin(this.tracker.idle(), IN_FLIGHT_STOP_WAIT_MS, () => new Error('in flight')).catch(() => {});
      this.tracker.clear();
      const i = this.members.indexOf(this);
      if (i >= 0) this.members.splice(i, 1);
      for (const m of this.members) m.rebalanced();
    })();
    return this.stopped;
  }
}
