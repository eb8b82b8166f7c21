import type { Config } from '../config/schema';
import { nowNs } from '../domain/time';
import { decodeWebhook, encodeWebhook, type Webhook } from '../records/webhook';
import { errorMessage } from '../errors/errors';
import type { Clock } from '../ports/clock';
import type { EndedLookup, HotState } from '../ports/hot-state';
import type { ConsumedBatch, LogProducer, LogRecord } from '../ports/log';
import { createAttempter, type AttemptDeps, type Lane, type Step } from './attempt';
import { createHandoff, type Flushable, type Leased } from './handoff';
import { createLeaseKeeper, writeLeases } from './lease-keeper';
import type { Logger } from '../ports/logger';
import { invalidRecordValue } from '../records/dead-letter';
import { snapshotValue } from '../records/state';
import { durableStages, fetchedStages } from './stage-marks';
import type { OutcomeBus } from '../ports/outcome-bus';
import { notifyFirstOutcomes } from './first-outcomes';
import { TRACEPARENT } from '../ports/tracing';
import { createRecentOutcomes, type RecentOutcomes } from './recent-outcomes';
import { knownPasses, type KnownPasses } from './known-passes';
import { collector } from './outcome-collect';
import { createRunningCopies } from './running-copies';
import { durablyWith } from './durably';
import { createOwedWrites } from './owed-writes';
import { stragglers } from './stragglers';
import { createSentMarks, RESCHEDULED } from './sent-marks';
import { attemptHoldingPauses } from './pause-hold';

export type DeliverDeps = AttemptDeps & {
  config: Config;
  hot: HotState;
  producer: LogProducer;
  clock: Clock;
  log: Logger;
  /** Where the first outcomes of awaited webhooks go (enqueue ?wait=). */
  outcomes?: OutcomeBus;
  /** Ended statuses, read for the webhooks of a batch that may have been consumed before (ConsumedBatch.maybeSeen). */
  ended?: EndedLookup;
  /** The attempts this worker made recently (shared by its lanes); one of delivery.recent_outcomes entries when not given. */
  recent?: RecentOutcomes;
};

/**
 * Delivers one consumed batch and makes every outcome durable before returning: results,
 * dead letters, lane moves and state records in one produce; retries, status and stats in
 * one hot-state round trip. The consumer commits the batch's offsets only after this
 * resolves (and every earlier batch of the partition has), so a crash anywhere before
 * redelivers the batch (at-least-once). Calls overlap: the consumer starts a partition's next
 * batch while this one runs (core/ports/log.ts), in offset order.
 */
export const createDeliverer = (d: DeliverDeps, lane: Lane = 'fast') => {
  const { config } = d;
  const topics = config.kafka.topics;
  let stopping = false;
  const attempter = createAttempter({ ...d, isStopping: () => stopping });
  const durably = durablyWith(d.log, () => stopping);
  const attemptOne = attemptHoldingPauses({ ...d, attempter, durably }, lane);
  const owed = createOwedWrites(d.hot, d.log, config.degraded.max_owed_statuses);
  const lookup = { lookupRetryMs: config.degraded.enabled ? config.degraded.recheck_interval : undefined, isStopping: () => stopping };

  const collect = collector(d, topics);

  const recent = d.recent ?? createRecentOutcomes(config.delivery.recent_outcomes);
  const attemptedOf = (steps: readonly Step[]) => steps.flatMap((s) => (s.kind === 'attempted' ? [s.o.webhook] : []));
  const durable = (steps: readonly Step[]) => recent.settle(attemptedOf(steps));
  const handoff = createHandoff({ hot: d.hot, producer: d.producer, log: d.log, stages: d.stages, clock: d.clock, outcomes: d.outcomes, durable });
  // Per-key lanes outlive a batch when its stragglers are handed off: the next batch's webhooks of that key queue behind them.
  const tails = new Map<string, Promise<void>>();
  const cuts = new Set<() => void>();
  const leases = createLeaseKeeper({ hot: d.hot, clock: d.clock, log: d.log, leaseMs: config.delivery.handoff_lease });

  const copies = createRunningCopies();
  const marks = createSentMarks(config.delivery.sent_marks ? d.ended : undefined, d.log, d.clock);

  // When each config's lane last finished a step, in any batch: a lane queued behind the
  // tail of an earlier batch is moving as long as that tail is.
  const moved = new Map<string, number>();

  /** Runs the batch's lanes (one per config). `progress` holds when each lane not yet done started. */
  const runLanes = (
    hooks: Webhook[],
    progress: Map<string, number>,
    known: KnownPasses,
    onStep: (w: Webhook, s: Step) => void,
    onCut: (ws: Webhook[]) => void,
    lost: (w: Webhook) => boolean,
  ): Promise<void> => {
    const groups = new Map<string, Webhook[]>();
    for (const w of hooks) {
      const g = groups.get(w.config_id);
      if (g) g.push(w);
      else groups.set(w.config_id, [w]);
    }
    const start = d.clock.now();
    const lanes = [...groups].map(([key, items]) => {
      const prev = tails.get(key);
      progress.set(key, start);
      let next = 0;
      // Its webhooks not taken yet are given up (a stop: at once, not after the one in flight).
      const cut = () => {
        if (next >= items.length) return;
        attempter.discard(items[next]!); // what was asked ahead for it is given back
        onCut(items.splice(next));
      };
      cuts.add(cut);
      // A lane is a few webhooks of a batch (one config each): its own promises are kept few.
      const run = (async () => {
        if (prev) await prev;
        const n = Math.min(config.kafka.per_key_parallelism, items.length);
        // Asking ahead for the next webhook only works when this worker is the one that takes
        // it: with parallel workers another may, and the answer asked ahead (a lease and a
        // connection slot on a 'go') would be held by nobody.
        const ahead = n === 1;
        const worker = async () => {
          while (next < items.length && !stopping && !lost(items[next]!)) {
            const w = items[next++]!;
            let seen = known.check(w);
            if (seen instanceof Promise) seen = await seen;
            if (seen)
              attempter.discard(w); // what was asked ahead for it is given back
            // Slow lane: each endpoint at its own pace (limit / latency).
            else if (d.pacer) await d.pacer.pace(w.endpoint_hash);
            const step = seen ?? (await attemptOne(w, ahead ? items[next] : undefined, start));
            if (!seen) marks.step(step);
            onStep(w, step);
            moved.set(key, d.clock.now());
          }
        };
        try {
          await (n === 1 ? worker() : Promise.all(Array.from({ length: n }, worker)));
        } finally {
          cut();
          cuts.delete(cut);
          progress.delete(key);
        }
      })();
      const ended = () => {
        if (tails.get(key) !== tail) return;
        tails.delete(key);
        moved.delete(key);
      };
      const tail: Promise<void> = run.then(ended, ended);
      tails.set(key, tail);
      return run;
    });
    return Promise.all(lanes).then(() => undefined);
  };

  const flushable = (steps: Step[], leases: Leased[], records: LogRecord[] = []): Flushable => {
    const { statuses, retries, ended, counts } = collect(steps, records);
    return { records, hot: { statuses, retries, ended, stats: { at: d.clock.now(), counts, endpoints: [] } }, leases, steps };
  };

  const deliver = async (batch: ConsumedBatch): Promise<void> => {
    fetchedStages(d.stages, batch, d.clock.now());
    const records: LogRecord[] = [];
    const hooks: Webhook[] = [];
    const rescheduled: Webhook[] = [];
    for (const rec of batch.records) {
      try {
        const w = decodeWebhook(rec.value ?? '');
        // A record produced with a trace context but no `trace` (another producer): its header is the parent.
        if (d.tracing && !w.trace && rec.headers?.[TRACEPARENT]) w.trace = rec.headers[TRACEPARENT];
        if (rec.headers?.[RESCHEDULED]) rescheduled.push(w);
        hooks.push(w);
      } catch (e) {
        d.log.error('undecodable record dead-lettered', { topic: rec.topic, partition: rec.partition, offset: rec.offset });
        records.push({ topic: topics.deadletter, key: null, value: invalidRecordValue(rec.value, e, d.clock.now()) });
        d.events?.deadLettered('invalid_record');
      }
    }
    const steps: Step[] = [];
    const finished = new Set<Webhook>();
    const leased = new Map<Webhook, Leased>();
    const progress = new Map<string, number>();
    // No await before this: each config's lane must be registered in `tails` at the call, so that
    // the lanes of a batch started next queue behind these (test/unit/deliver-overlap.test.ts).
    // Records the scheduler put back are looked up for their sent marks, not waited on: while
    // Redis is away they are sent (what only the marks know is a duplicate, never a loss).
    const seen = batch.maybeSeen === true;
    const lookupOf = { recent, ended: d.ended, clock: d.clock, log: d.log, ...lookup, ...(seen ? {} : { lookupRetryMs: undefined }) };
    const known = knownPasses(lookupOf, hooks, seen || (config.delivery.sent_marks && rescheduled), batch.afterAssignment === true);
    const onStep = (w: Webhook, s: Step) => {
      finished.add(w);
      if (s.kind === 'attempted') recent.made(w);
      const lease = leased.get(w);
      if (lease) leases.remove(lease);
      if (lease) handoff.add(flushable([s], [lease]));
      else steps.push(s);
    };
    // Handed off, then given up unattempted (a stop, a lane that failed): due now, not after the lease.
    // A partition lost to another owner: what is not started nor handed off is left to it (no duplicates).
    const lost = (w: Webhook) => batch.lost?.() === true && !leased.has(w);
    const all = runLanes(hooks, progress, known, onStep, (ws) => void leases.release(ws.flatMap((w) => leased.get(w) ?? [])), lost);
    copies.track(hooks, all); // synchronously with the call: copies are kept in batch order
    // A long batch (its lanes all moving) writes the outcomes it has every straggler_after,
    // so statuses and results do not wait for its end; the offsets still commit only once
    // every outcome of the batch is durable.
    const partial: Promise<void>[] = [];
    const ticker = setInterval(() => {
      if (!steps.length) return;
      const p = writeOutcomes(steps.splice(0), []);
      p.catch(() => {}); // awaited below; a stop before that leaves the batch uncommitted anyway
      partial.push(p);
    }, config.delivery.straggler_after);
    const { handoff_lease, max_handoff } = config.delivery;
    const timedOut = await stragglers({ clock: d.clock, delivery: config.delivery, moved }, all, progress).finally(() => clearInterval(ticker));
    if (timedOut && handoff.size() < max_handoff && batch.lost?.() !== true) {
      // Synchronously with the check: from here on, these webhooks report to the handoff.
      const now = d.clock.now();
      const rest: Webhook[] = [];
      for (const w of hooks) {
        if (finished.has(w)) continue;
        // A pass this worker made, or a copy of one an earlier batch runs here, is not leased: the
        // lease would replace the retry its outcome scheduled, and the copy, known, writes nothing
        // to bring it back (known-passes.ts, pin / pinCopy). Its lane skips it.
        if (known.pin(w) || (copies.earlier(w) && known.pinCopy(w, copies.oldestRun(w)))) finished.add(w);
        else rest.push(w);
      }
      const retries = rest.map((w) => ({ id: w.id, dueAt: now + handoff_lease, data: encodeWebhook(w) }));
      // The lease is in Redis; a snapshot of it on howk.state lets a rebuild restore it too.
      // Snapshot first (see below: a flush must never take what howk.state has not got yet).
      const leasedAt = nowNs(now);
      const snapshots = retries.map((r, i) => ({ topic: topics.state, key: r.id, value: snapshotValue(rest[i]!, { webhook_id: r.id, updated_at_ns: leasedAt }, r.dueAt, r.data) }));
      const mine: Leased[] = [];
      const written = durably('lease snapshot', () => d.producer.send(snapshots)).then(() => durably('lease write', () => writeLeases(d, retries, mine, handoff_lease)));
      for (const w of rest) {
        const lease = { id: w.id, leaseDueAt: now + handoff_lease, leaseWritten: written };
        mine.push(lease);
        leased.set(w, lease);
        leases.add(lease);
      }
      handoff.taken(rest.length);
      all.catch((e) => d.log.warn('background delivery failed; its lease will re-enqueue it', { error: errorMessage(e) }));
      await written;
    } else {
      await all;
    }
    // A stop cut some lanes short: the batch stays uncommitted (a lost one writes what it sent first, below).
    const cutShort = hooks.some((w) => !finished.has(w) && !leased.has(w));
    if (cutShort && stopping) {
      const e = new Error('worker stopping: batch left uncommitted');
      recent.settle(attemptedOf(steps), e);
      throw e;
    }
    if (known.skipped()) d.log.info('webhooks consumed again were not sent again: their pass was made', { webhooks: known.skipped(), of: hooks.length });
    if (known.replayed()) d.log.info('webhooks consumed again were not sent again: a sent mark names their pass', { webhooks: known.replayed(), of: hooks.length });
    // Its deliveries are done or handed off: writing their outcomes needs no more of the worker.
    batch.release?.();
    await Promise.all([...partial, writeOutcomes(steps.splice(0), records), attempter.settle(), known.durable()]);
    if (cutShort) throw new Error('partition lost: its webhooks not started are left to its next owner');
  };

  /** Makes the outcomes of some of a batch's steps durable (plus `records`, e.g. dead letters of undecodable records). */
  const writeOutcomes = async (part: Step[], records: LogRecord[]): Promise<void> => {
    const own = flushable(part, []);
    // Both must succeed before the batch's offsets are committed (at-least-once) — except
    // that status and stats alone are fail-silent (docs/ARCHITECTURE.md, Failure semantics):
    // a batch with no retry to schedule commits even when Redis is down, instead of redelivering;
    // its statuses are owed, written once Redis answers (owed-writes.ts).
    const apply = () =>
      d.hot.apply(own.hot).catch((e) => {
        if (own.hot.retries?.length) throw e;
        owed.add(own.hot, e);
      });
    const out = [...records, ...own.records];
    // Kafka first, then Redis: a retry in Redis whose snapshot is not yet on howk.state would be
    // lost to a FLUSHALL landing in between (the rebuild reads howk.state only up to where it
    // was when it started). test/unit/reconcile-flush-race.test.ts
    try {
      await durably('outcome produce', () => d.producer.send(out));
      await durably('retry scheduling', apply);
    } catch (e) {
      recent.settle(attemptedOf(part), e);
      throw e;
    }
    recent.settle(attemptedOf(part));
    durableStages(d.stages, part, d.clock.now());
    notifyFirstOutcomes(d.outcomes, part, d.log);
  };
  /** Stops starting deliveries, waits for those in flight and flushes their outcomes (graceful stop). */
  const drain = async () => {
    stopping = true;
    for (const cut of cuts) cut();
    await Promise.all([...tails.values()]); // still renewing the leases of deliveries in flight
    leases.stop();
    await handoff.drain();
    await owed.stop();
  };
  return Object.assign(deliver, { drain });
};

export type Deliverer = ReturnType<typeof createDeliverer>;
