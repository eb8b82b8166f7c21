import { decodeWebhook, type Webhook } from '../records/webhook';
import type { ConsumedBatch, LogRecord } from '../ports/log';
import type { Lane } from '../domain/webhook';
import { invalidRecordValue } from '../records/dead-letter';
import { fetchedStages } from './stage-marks';
import { TRACEPARENT } from '../ports/tracing';
import { knownPasses } from './known-passes';
import { stragglers } from './stragglers';
import { RESCHEDULED } from './sent-marks';
import { attemptedOf, deliveryContext, type DeliverDeps, type DeliveryCtx } from './delivery-context';
import { runLanes, type BatchRun } from './lanes';
import { flushable, writeOutcomes } from './outcome-write';
import { leaseStragglers } from './straggler-lease';

export type { DeliverDeps };

/** The take-a-batch stage: its records decoded; an undecodable one becomes a dead letter. */
const takeBatch = (x: DeliveryCtx, batch: ConsumedBatch) => {
  const { d } = x;
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
      records.push({ topic: x.topics.deadletter, key: null, value: invalidRecordValue(rec.value, e, d.clock.now()) });
      d.events?.deadLettered('invalid_record');
    }
  }
  return { records, hooks, rescheduled };
};

/** The batch's run: what is known of its passes (looked up when it may have been consumed before) and where each webhook's step goes. */
const startRun = (x: DeliveryCtx, batch: ConsumedBatch, hooks: Webhook[], rescheduled: Webhook[]): BatchRun => {
  const { d, config } = x;
  // Records the scheduler put back are looked up for their sent marks, not waited on: while
  // Redis is away they are sent (what only the marks know is a duplicate, never a loss).
  const seen = batch.maybeSeen === true;
  const lookupOf = { recent: x.recent, ended: d.ended, clock: d.clock, log: d.log, ...x.lookup, ...(seen ? {} : { lookupRetryMs: undefined }) };
  const known = knownPasses(lookupOf, hooks, seen || (config.delivery.sent_marks && rescheduled), batch.afterAssignment === true);
  const run: BatchRun = {
    hooks,
    steps: [],
    finished: new Set(),
    leased: new Map(),
    progress: new Map(),
    known,
    onStep: (w, s) => {
      run.finished.add(w);
      if (s.kind === 'attempted') x.recent.made(w);
      const lease = run.leased.get(w);
      if (lease) x.leases.remove(lease);
      if (lease) x.handoff.add(flushable(x, [s], [lease]));
      else run.steps.push(s);
    },
    // Handed off, then given up unattempted (a stop, a lane that failed): due now, not after the lease.
    onCut: (ws) => void x.leases.release(ws.flatMap((w) => run.leased.get(w) ?? [])),
    // A partition lost to another owner: what is not started nor handed off is left to it (no duplicates).
    lost: (w) => batch.lost?.() === true && !run.leased.has(w),
  };
  return run;
};

/**
 * Delivers one consumed batch and makes every outcome durable before returning: results,
 * dead letters, lane moves and state records in one produce; retries, status and stats in
 * one hot-state round trip. The consumer commits the batch's offsets only after this
 * resolves (and every earlier batch of the partition has), so a crash anywhere before
 * redelivers the batch (at-least-once). Calls overlap: the consumer starts a partition's next
 * batch while this one runs (core/ports/log.ts), in offset order.
 */
const deliverBatch = async (x: DeliveryCtx, batch: ConsumedBatch): Promise<void> => {
  const { d, config } = x;
  const { records, hooks, rescheduled } = takeBatch(x, batch);
  // No await before the lanes start: each config's lane must be registered in `tails` at the
  // call, so that the lanes of a batch started next queue behind these
  // (test/unit/deliver-overlap.test.ts).
  const run = startRun(x, batch, hooks, rescheduled);
  const all = runLanes(x, run);
  x.copies.track(hooks, all); // synchronously with the call: copies are kept in batch order
  // A long batch (its lanes all moving) writes the outcomes it has every straggler_after,
  // so statuses and results do not wait for its end; the offsets still commit only once
  // every outcome of the batch is durable.
  const partial: Promise<void>[] = [];
  const ticker = setInterval(() => {
    if (!run.steps.length) return;
    const p = writeOutcomes(x, run.steps.splice(0), []);
    p.catch(() => {}); // awaited below; a stop before that leaves the batch uncommitted anyway
    partial.push(p);
  }, config.delivery.straggler_after);
  const timedOut = await stragglers({ clock: d.clock, delivery: config.delivery, moved: x.moved }, all, run.progress).finally(() => clearInterval(ticker));
  if (timedOut && x.handoff.size() < config.delivery.max_handoff && batch.lost?.() !== true) await leaseStragglers(x, run, all);
  else await all;
  // A stop cut some lanes short: the batch stays uncommitted (a lost one writes what it sent first, below).
  const cutShort = hooks.some((w) => !run.finished.has(w) && !run.leased.has(w));
  if (cutShort && x.state.stopping) {
    const e = new Error('worker stopping: batch left uncommitted');
    x.recent.settle(attemptedOf(run.steps), e);
    throw e;
  }
  const { known } = run;
  if (known.skipped()) d.log.info('webhooks consumed again were not sent again: their pass was made', { webhooks: known.skipped(), of: hooks.length });
  if (known.replayed()) d.log.info('webhooks consumed again were not sent again: a sent mark names their pass', { webhooks: known.replayed(), of: hooks.length });
  // Its deliveries are done or handed off: writing their outcomes needs no more of the worker.
  batch.release?.();
  await Promise.all([...partial, writeOutcomes(x, run.steps.splice(0), records), x.attempter.settle(), known.durable()]);
  if (cutShort) throw new Error('partition lost: its webhooks not started are left to its next owner');
};

/** A deliverer for one lane of a worker: `deliver(batch)`, and `drain()` for a graceful stop. */
export const createDeliverer = (d: DeliverDeps, lane: Lane = 'fast') => {
  const x = deliveryContext(d, lane);
  const deliver = (batch: ConsumedBatch): Promise<void> => deliverBatch(x, batch);
  /** Stops starting deliveries, waits for those in flight and flushes their outcomes (graceful stop). */
  const drain = async () => {
    x.state.stopping = true;
    for (const cut of x.cuts) cut();
    await Promise.all([...x.tails.values()]); // still renewing the leases of deliveries in flight
    x.leases.stop();
    await x.handoff.drain();
    await x.owed.stop();
  };
  return Object.assign(deliver, { drain });
};

export type Deliverer = ReturnType<typeof createDeliverer>;
