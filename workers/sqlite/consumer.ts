import { settleWithin } from '../../core/domain/deadline';
import { createBatchTracker, DEFAULT_MAX_UNRESOLVED, IN_FLIGHT_STOP_WAIT_MS, type BatchTracker } from '../../core/log/batch-tracker';
import type { BatchHandler, ConsumerOptions, LogConsumer } from '../../core/ports/log';
import type { SqliteLog } from './log';

// A consumer group member of the embedded log, pipelined like the memory and Kafka
// consumers (core/ports/log.ts, core/log/batch-tracker.ts): a partition's next batch starts
// while earlier ones run, and offsets are committed to the file in offset order once every
// batch up to them has resolved. Partitions are shared among the group's members in this
// process (partition i goes to member i mod n). A restarted process resumes after the last
// committed offset and gets every later record again (at-least-once).

const MAX_BATCH = 500;
/** A rejected batch's partition rests this long before it is taken again. */
const REWIND_PAUSE_MS = 100;

export type ConsumerGroup = { id: string; members: SqliteConsumer[] };

export class SqliteConsumer implements LogConsumer {
  private running = false;
  private paused = false;
  private stopped: Promise<void> | undefined;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  /** Partitions resting after a rejected batch, until then. */
  private readonly restUntil = new Map<string, number>();
  private readonly tracker: BatchTracker;

  constructor(
    private readonly log: SqliteLog,
    private readonly group: ConsumerGroup,
    private readonly opts: ConsumerOptions,
  ) {
    this.tracker = createBatchTracker(opts.maxUnresolved ?? DEFAULT_MAX_UNRESOLVED, {
      commit: (topic, partition, offset, batches) => {
        if (!this.group.members.includes(this) || !this.assigned(partition)) return;
        try {
          this.log.commit(this.group.id, topic, partition, Number(offset));
        } catch {
          // Closed or failing file: not committed, so delivered again (at-least-once).
          return;
        }
        const now = Date.now();
        for (const b of batches) this.opts.onCommitted?.(b.count, now - b.resolvedAt);
      },
      rewind: (topic, partition) => {
        this.restUntil.set(`${topic}:${partition}`, Date.now() + REWIND_PAUSE_MS);
      },
      settled: () => this.wake?.(),
    });
  }

  private assigned(partition: number): boolean {
    const members = this.group.members;
    return members[partition % members.length] === this;
  }

  /** Membership changed: partitions lost no longer commit; the new owner starts from the last commit. */
  rebalanced(): void {
    this.tracker.reassign((_topic, partition) => this.assigned(partition));
    this.wake?.();
  }

  private nap(ms: number): Promise<void> {
    return this.log.waitForAppend(ms, (done) => (this.wake = done));
  }

  /** Where the group stands on a partition; a partition seen for the first time gets its start written down. */
  private committed(topic: string, partition: number, end: number): number {
    const at = this.log.committed(this.group.id, topic, partition);
    if (at !== undefined) return at;
    const start = this.opts.fromBeginning === false ? end : 0;
    // Recorded at once: retention never deletes what a known group has not consumed.
    this.log.commit(this.group.id, topic, partition, start);
    return start;
  }

  /** Takes every batch available now, in partition then offset order, while there is room. */
  private takeAll(handler: BatchHandler): boolean {
    let took = false;
    const now = Date.now();
    for (const topic of this.opts.topics) {
      const t = this.log.topic(topic);
      for (let partition = 0; partition < t.partitions; partition++) {
        if (!this.tracker.hasRoom()) return took;
        if (!this.assigned(partition)) continue;
        if ((this.restUntil.get(`${topic}:${partition}`) ?? 0) > now) continue;
        const end = t.next[partition]!;
        const tracked = this.tracker.position(topic, partition);
        const from = tracked ?? BigInt(this.committed(topic, partition, end));
        if (Number(from) >= end) continue;
        const records = this.log.read(topic, partition, Number(from), end, MAX_BATCH);
        if (!records.length) {
          // Compaction or retention removed everything up to the end: nothing to hand over.
          if (tracked === undefined) this.log.commit(this.group.id, topic, partition, end);
          continue;
        }
        took = true;
        const next = BigInt(records[records.length - 1]!.offset) + 1n;
        this.tracker.take(topic, partition, from, next, records.length, () => handler({ topic, partition, records }));
      }
    }
    return took;
  }

  async run(handler: BatchHandler): Promise<void> {
    this.running = true;
    this.group.members.push(this);
    for (const m of this.group.members) m.rebalanced();
    this.loop = (async () => {
      while (this.running) {
        let took = false;
        try {
          took = !this.paused && this.takeAll(handler);
        } catch {
          // The file could not be read (or a start position written): look again shortly.
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
      const i = this.group.members.indexOf(this);
      if (i >= 0) this.group.members.splice(i, 1);
      for (const m of this.group.members) m.rebalanced();
    })();
    return this.stopped;
  }
}
