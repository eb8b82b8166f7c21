import type { BatchHandler, ConsumerOptions, LogConsumer } from '../../core/ports/log';
import type { SqliteLog } from './log';

// A consumer group member of the embedded log. Partitions are shared among the group's
// members in this process (partition i goes to member i mod n); a batch's offsets are
// committed to the file once its handler resolves, so a restarted process resumes after the
// last resolved batch and gets every later record again (at-least-once).

const MAX_BATCH = 500;
/** A batch whose handler threw is offered again after this pause. */
const RETRY_PAUSE_MS = 100;

export type ConsumerGroup = { id: string; members: SqliteConsumer[] };

export class SqliteConsumer implements LogConsumer {
  private running = false;
  private paused = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly log: SqliteLog, private readonly group: ConsumerGroup, private readonly opts: ConsumerOptions) {}

  private assigned(partition: number): boolean {
    const members = this.group.members;
    return members[partition % members.length] === this;
  }

  /** Where the group stands on a partition; a partition seen for the first time gets its start written down. */
  private position(topic: string, partition: number, end: number): number {
    const at = this.log.committed(this.group.id, topic, partition);
    if (at !== undefined) return at;
    const start = this.opts.fromBeginning === false ? end : 0;
    // Recorded at once: retention never deletes what a known group has not consumed.
    this.log.commit(this.group.id, topic, partition, start);
    return start;
  }

  private takeBatches(handler: BatchHandler): Promise<void>[] {
    const work: Promise<void>[] = [];
    for (const topic of this.opts.topics) {
      const t = this.log.topic(topic);
      for (let partition = 0; partition < t.partitions; partition++) {
        if (!this.assigned(partition)) continue;
        const end = t.next[partition]!;
        const from = this.position(topic, partition, end);
        if (from >= end) continue;
        const records = this.log.read(topic, partition, from, end, MAX_BATCH);
        if (!records.length) {
          // Compaction or retention removed everything up to the end: nothing to hand over.
          this.log.commit(this.group.id, topic, partition, end);
          continue;
        }
        const next = Number(records[records.length - 1]!.offset) + 1;
        work.push(
          handler({ topic, partition, records }).then(
            () => {
              const t0 = Date.now();
              this.log.commit(this.group.id, topic, partition, next);
              this.opts.onCommitted?.(records.length, Date.now() - t0);
            },
            // Not committed: the same batch comes again after a short pause.
            () => new Promise((r) => setTimeout(r, RETRY_PAUSE_MS)),
          ),
        );
      }
    }
    return work;
  }

  async run(handler: BatchHandler): Promise<void> {
    this.running = true;
    this.group.members.push(this);
    this.loop = (async () => {
      while (this.running) {
        let work: Promise<void>[] = [];
        try {
          if (!this.paused) work = this.takeBatches(handler);
        } catch {
          // The file could not be read (or a commit failed): try again shortly.
          await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
          continue;
        }
        if (work.length) await Promise.allSettled(work);
        else await this.log.waitForAppend(this.paused ? 50 : 200);
      }
    })();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.log.wake();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.log.wake();
    await this.loop;
    const i = this.group.members.indexOf(this);
    if (i >= 0) this.group.members.splice(i, 1);
  }
}
