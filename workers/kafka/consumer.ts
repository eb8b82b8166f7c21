import type { Consumer, ConsumerRunConfig, EachBatchPayload } from 'kafkajs';
import { settleWithin } from '../../core/domain/deadline';
import { errorMessage } from '../../core/errors/errors';
import { createBatchTracker, DEFAULT_MAX_UNRESOLVED, IN_FLIGHT_STOP_WAIT_MS, type BatchTracker, type CommittedBatch } from '../../core/log/batch-tracker';
import type { Logger } from '../../core/ports/logger';
import type { BatchHandler, ConsumerOptions, LogConsumer } from '../../core/ports/log';
import * as parts from './consumer-parts';
import { membershipFence, type MembershipFence } from './membership-fence';

// Pipelined consumption on kafkajs 2.2.4. What its source (src/consumer/) says, and the
// design that follows from it:
//
// - The fetch position of a partition is the offset manager's *resolved* offset
//   (offsetManager.nextOffset: resolvedOffsets, else the committed offset), and a fetcher
//   fetches again only once every batch of its previous response went through eachBatch
//   (fetcher.js waits on workerQueue.push). So eachBatch resolves a batch's last offset as
//   soon as it has *taken* the batch and returns without awaiting the handler: the next
//   fetch goes past it while it runs. Resolved therefore means "fetched", not "done".
// - Hence autoCommit: false. With autoCommit, the runner commits every resolved offset
//   (after each batch, on an eachBatch error, on a rebalancing heartbeat), which would commit
//   batches still running. The consumer commits its own watermark (core/log/batch-tracker.ts:
//   past a prefix of resolved batches only) with consumer.commitOffsets, one request at a
//   time, coalescing the partitions that advanced meanwhile.
// - seek() with autoCommit: false only moves the resolved offset (offsetManager.seek), and
//   until the next fetch pops it, fetched batches of that partition are dropped
//   (consumerGroup.fetch) and isStale() is true in eachBatch. A rejected batch seeks its
//   partition back to its first offset; batches of it already taken keep running but no
//   longer commit.
// - On a rebalance, kafkajs builds a new offset manager (consumerGroup.js, SYNC): resolved
//   but uncommitted offsets are dropped and fetching restarts from the committed offset. The
//   GROUP_JOIN event carries the new assignment: partitions lost lose their tracking (their
//   batches in flight commit nothing, so they cannot commit over the new owner); partitions
//   kept are sought to where this consumer had got, so that the batches in flight are not
//   fetched again. Commits carry the member's generation: the broker refuses those of an old
//   one (ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, not retried by kafkajs), and a commit is
//   sent only for partitions of the current assignment. One that slips through anyway (a
//   retried commit crossing a rebalance) only names offsets this consumer made durable, so it
//   can cause redelivery, never loss. Commit errors are logged, never thrown.
// - A crash (the consumer restarted) drops all tracking, a disconnect resolved offsets: stop()
//   commits first. A member unsure it is still in its group takes nothing (membership-fence.ts).
// - A rebalance moves partitions. take() heartbeats first; when the group rebalances, it lets
//   kafkajs rejoin (it cannot while eachBatch runs) once the batches in flight have resolved
//   and committed (REVOKE_WAIT_MS at most; a member of the current generation may still commit
//   then). A new member fetches JOIN_WAIT_MS late (docs/RELIABILITY.md, "Group membership").

type Commit = { topic: string; partition: number; offset: string; batches: CommittedBatch[] };

export class KafkaConsumer implements LogConsumer {
  private pausedTopics = false;
  private stopping = false;
  private stopped: Promise<void> | undefined;
  /** Partitions of the current assignment. */
  private assigned = new Set<string>();
  private readonly tracker: BatchTracker;
  private readonly pending = new Map<string, Commit>();
  private committing: Promise<void> | undefined;
  /** Set once a heartbeat found the group rebalancing: batches in flight resolve and commit before the rejoin. */
  private revoking: Promise<void> | undefined;
  private joined = false;
  private fence: MembershipFence | undefined;

  /** `refit`: a consumer to use instead, asked once before the first run (a session timeout the brokers accept). */
  constructor(
    private c: Consumer,
    private readonly opts: ConsumerOptions,
    private readonly concurrency: number,
    private readonly log: Logger,
    private readonly onError?: (op: string) => void,
    private readonly refit?: () => Promise<Consumer | undefined>,
    private readonly readEnds?: parts.ReadEnds,
    /** The session timeout joined with (known once `refit` ran): past two thirds of it without a heartbeat answered, no batch is taken. */
    private readonly sessionMs?: () => number,
  ) {
    this.tracker = createBatchTracker(opts.maxUnresolved ?? DEFAULT_MAX_UNRESOLVED, {
      commit: (topic, partition, offset, batches) => {
        const k = parts.keyOf(topic, partition);
        // A commit not yet sent is carried by this one: so are the batches it covered.
        const earlier = this.pending.get(k)?.batches ?? [];
        this.pending.set(k, { topic, partition, offset: offset.toString(), batches: earlier.length ? [...earlier, ...batches] : batches });
        this.flush();
      },
      rewind: (topic, partition, offset, error) => this.rewind(topic, partition, offset, error),
    });
  }

  private listening = false;
  private restarts = 0; // in a row, after crashes kafkajs does not restart (reset by a join)
  private assignments = 0; // joins and crashes: an answer of boundDoubt for an older one is dropped

  async run(handler: BatchHandler): Promise<void> {
    if (!this.listening) {
      this.listening = true;
      this.c = (await this.refit?.()) ?? this.c;
      parts.logGroupEvents(this.c, this.log, this.opts.groupId);
      if (this.sessionMs) this.fence = membershipFence(this.c, this.sessionMs(), this.log, this.opts.groupId);
      this.c.on(this.c.events.GROUP_JOIN, (e) => this.onJoin(e.payload.memberAssignment));
      this.c.on(this.c.events.CRASH, (e) => {
        this.onError?.('consumer_crash');
        this.assignments++;
        this.revoking = undefined;
        this.assigned.clear();
        this.tracker.reassign(() => false);
        if (!e.payload.restart) this.restartLater(handler, errorMessage(e.payload.error));
      });
    }
    try {
      await this.c.connect();
      await this.c.subscribe({ topics: this.opts.topics, fromBeginning: this.opts.fromBeginning ?? true });
      await this.c.run(this.runConfig(handler));
    } catch (e) {
      // Left disconnected, so that run may be called again (the worker retries its start).
      await this.c.disconnect().catch(() => {});
      throw e;
    }
  }

  private runConfig(handler: BatchHandler): ConsumerRunConfig {
    return { autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: this.concurrency, eachBatch: (p) => this.take(p, handler) };
  }

  /** kafkajs leaves a consumer stopped after an error it deems not retriable ("Failed to find group
   *  coordinator" as the broker shuts down: a lane lost for good); it is started again, with backoff. */
  private restartLater(handler: BatchHandler, error: string): void {
    if (this.stopping) return;
    const wait = Math.min(300 * 2 ** this.restarts++, 5000);
    this.log.warn('consumer stopped by kafkajs after an error; starting it again', { error, in_ms: wait });
    setTimeout(() => {
      if (this.stopping) return;
      // A start that fails crashes again (the event above): kafkajs or this restarts it.
      this.c.run(this.runConfig(handler)).catch((e: unknown) => this.restartLater(handler, errorMessage(e)));
    }, wait);
  }

  private onJoin(assignment: Record<string, number[]>): void {
    this.restarts = 0;
    this.revoking = undefined;
    // A new member's partitions come from members that may still be finishing batches of them
    // (those that learnt of the rebalance from an idle fetch): it fetches them a little later
    // (JOIN_WAIT_MS says how much later, and why not more).
    if (!this.joined && !this.pausedTopics) for (const [topic, ps] of Object.entries(assignment)) if (ps.length) this.pauseFor(topic, ps, parts.JOIN_WAIT_MS);
    this.joined = true;
    this.assigned = new Set(Object.entries(assignment).flatMap(([topic, ps]) => ps.map((p) => parts.keyOf(topic, p))));
    for (const k of this.pending.keys()) if (!this.assigned.has(k)) this.pending.delete(k);
    const kept = this.tracker.reassign((topic, partition) => this.assigned.has(parts.keyOf(topic, partition)));
    const n = ++this.assignments;
    if (this.readEnds) void parts.boundDoubt(this.readEnds, assignment, this.tracker, () => n === this.assignments, this.log);
    // Called from inside kafkajs' join (the event is synchronous): it must not throw.
    for (const { topic, partition, position } of kept) {
      try {
        this.c.seek({ topic, partition, offset: position.toString() });
      } catch (e) {
        this.log.warn('seek after a rebalance failed; the partition restarts from its last commit', { topic, partition, error: errorMessage(e) });
        this.tracker.reassign((t, p) => t !== topic || p !== partition);
      }
    }
  }

  private async take({ batch, resolveOffset, heartbeat, isStale }: EachBatchPayload, handler: BatchHandler): Promise<void> {
    // Left untaken (not resolved), a batch is fetched again later from the same offset.
    if (!batch.messages.length || isStale() || this.stopping || this.pausedTopics) return;
    if (this.revoking || (await this.rebalancing(heartbeat))) return this.revoking;
    // Backpressure: this blocks the fetcher, so nothing more is fetched until room opens.
    let rebalancing = false;
    while (!this.tracker.hasRoom()) {
      void heartbeat().catch((e: unknown) => {
        rebalancing ||= parts.isRebalancing(e);
      });
      await Promise.race([this.tracker.room(), new Promise((r) => setTimeout(r, parts.WAIT_HEARTBEAT_MS))]);
      // Leave the batch untaken: kafkajs cannot rejoin the group while eachBatch runs.
      if (rebalancing || isStale() || this.stopping) return;
    }
    if (this.fence?.unsure()) return this.fence.wait();
    const { topic, partition } = batch;
    const last = batch.messages[batch.messages.length - 1]!.offset;
    const records = parts.recordsOf(batch);
    // The next fetch of the partition starts after this batch (see the top of the file).
    resolveOffset(last);
    this.tracker.take(
      topic,
      partition,
      BigInt(batch.messages[0]!.offset),
      BigInt(batch.lastOffset()) + 1n,
      records.length,
      (release, maybeSeen, afterAssignment, lost) => handler({ topic, partition, records, release, maybeSeen, afterAssignment, lost }),
      parts.highOf(batch.highWatermark),
    );
    // The batch runs; only the next fetch waits (kafkajs fetches again once every batch of the
    // last response has been through eachBatch).
    const most = this.opts.maxBatchesInFlight;
    if (most !== undefined && !this.stopping) await parts.holdFetch(this.tracker, most, this.opts.maxHoldMs);
  }

  /** Heartbeats (kafkajs sends one only when its interval is up); on a rebalance, finishes what is in flight (see the top of the file). */
  private async rebalancing(heartbeat: () => Promise<void>): Promise<boolean> {
    try {
      await heartbeat();
      return false;
    } catch (e) {
      if (!parts.isRebalancing(e)) return false;
      this.revoking ??= parts.finishInFlight(this.tracker, () => this.flush(), this.log);
      return true;
    }
  }

  private rewind(topic: string, partition: number, offset: bigint, error: unknown): void {
    if (this.stopping) return;
    this.log.warn('batch failed: its partition is consumed again from its first offset', { topic, partition, offset: offset.toString(), error: errorMessage(error) });
    try {
      this.c.seek({ topic, partition, offset: offset.toString() });
      if (!this.pausedTopics) this.pauseFor(topic, [partition], parts.REWIND_PAUSE_MS);
    } catch (e) {
      // Not running (a crash being restarted): the restart fetches from the last commit.
      this.log.warn('rewind not applied; the consumer restarts from its last commit', { topic, partition, error: errorMessage(e) });
    }
  }

  /** Pauses partitions for `ms`; a topic-wide pause since then owns their state (partition resumes would override it). */
  private pauseFor(topic: string, partitions: number[], ms: number): void {
    this.c.pause([{ topic, partitions }]);
    setTimeout(() => {
      if (this.pausedTopics || this.stopping) return;
      try {
        this.c.resume([{ topic, partitions }]);
      } catch {
        // the consumer is restarting; its new run fetches everything it owns
      }
    }, ms);
  }

  /** Commits the partitions that advanced, one request at a time. */
  private flush(): Promise<void> {
    this.committing ??= (async () => {
      // Batches resolve every few ms under a steady load, and a commit request per batch cost
      // the worker and the broker more than the deliveries it covered: the batches that resolve
      // within commitIntervalMs share one commit. A later commit only widens what a crash
      // redelivers; it never commits what is not durable.
      const gather = this.opts.commitIntervalMs ?? 0;
      if (gather > 0 && !this.stopping) await new Promise((r) => setTimeout(r, gather));
      while (this.pending.size) {
        const offsets = [...this.pending.values()].filter((o) => this.assigned.has(parts.keyOf(o.topic, o.partition)));
        this.pending.clear();
        if (!offsets.length) continue;
        try {
          await this.c.commitOffsets(offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset })));
          const report = this.opts.onCommitted;
          if (report) {
            const now = Date.now();
            for (const o of offsets) for (const b of o.batches) report(b.count, now - b.resolvedAt);
          }
        } catch (e) {
          // Not fatal: a later commit of the partition carries this one, and an offset never
          // committed only means redelivery.
          this.log.warn('offset commit failed', { error: errorMessage(e), offsets });
          this.onError?.('commit');
          for (const o of offsets) if (!this.pending.has(parts.keyOf(o.topic, o.partition))) this.pending.set(parts.keyOf(o.topic, o.partition), o);
          // Tried again shortly even when no batch resolves meanwhile (a coordinator that moved is found again then).
          if (!this.stopping) setTimeout(() => void this.flush(), parts.COMMIT_RETRY_MS).unref();
          return;
        }
      }
    })().finally(() => {
      this.committing = undefined;
    });
    return this.committing;
  }

  pause(): void {
    this.pausedTopics = true;
    this.c.pause(this.opts.topics.map((topic) => ({ topic })));
  }

  resume(): void {
    if (!this.pausedTopics) return;
    this.pausedTopics = false;
    this.c.resume(this.opts.topics.map((topic) => ({ topic })));
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping = true;
      try {
        this.c.pause(this.opts.topics.map((topic) => ({ topic })));
      } catch {
        // never ran
      }
      // What is in flight may still finish and commit, within bounds.
      await settleWithin(this.tracker.idle(), IN_FLIGHT_STOP_WAIT_MS, () => new Error('in flight')).catch(() => {});
      await settleWithin(this.committing ?? Promise.resolve(), parts.COMMIT_STOP_WAIT_MS, () => new Error('commit')).catch(() => {});
      if (this.pending.size) await settleWithin(this.flush(), parts.COMMIT_STOP_WAIT_MS, () => new Error('commit')).catch(() => {});
      this.tracker.clear();
      // After a broker restart kafkajs' disconnect can sit out its whole retry schedule (19 s
      // seen), long enough to get the process killed. Leaving without it is safe: offsets are
      // committed only once outcomes are durable, and the group notices at its session timeout.
      await settleWithin(this.c.disconnect(), parts.CONSUMER_STOP_WAIT_MS, () => new Error('disconnect')).catch(() => {});
    })();
    return this.stopped;
  }
}
