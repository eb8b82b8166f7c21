import type { LogRecord } from '../ports/log';
import type { Step } from './attempt';
import { attemptedOf, type DeliveryCtx } from './delivery-context';
import { notifyFirstOutcomes } from './first-outcomes';
import type { Flushable, Leased } from './handoff';
import { durableStages } from './stage-marks';

/** The records and hot-state writes of some steps (and the leases they end, if handed off). */
export const flushable = (x: DeliveryCtx, steps: Step[], leases: Leased[], records: LogRecord[] = []): Flushable => {
  const { statuses, retries, ended, counts } = x.collect(steps, records);
  return { records, hot: { statuses, retries, ended, stats: { at: x.d.clock.now(), counts, endpoints: [] } }, leases, steps };
};

/**
 * The write-outcomes stage: makes the outcomes of some of a batch's steps durable (plus
 * `records`, e.g. dead letters of undecodable records). Both writes must succeed before the
 * batch's offsets are committed (at-least-once), except that status and stats alone are
 * fail-silent (docs/ARCHITECTURE.md, Failure semantics): a batch with no retry to schedule
 * commits even when Redis is down, instead of redelivering; its statuses are owed, written
 * once Redis answers (owed-writes.ts).
 */
export const writeOutcomes = async (x: DeliveryCtx, part: Step[], records: LogRecord[]): Promise<void> => {
  const { d } = x;
  const own = flushable(x, part, []);
  const apply = () =>
    d.hot.apply(own.hot).catch((e) => {
      if (own.hot.retries?.length) throw e;
      x.owed.add(own.hot, e);
    });
  const out = [...records, ...own.records];
  // Kafka first, then Redis: a retry in Redis whose snapshot is not yet on howk.state would be
  // lost to a FLUSHALL landing in between (the rebuild reads howk.state only up to where it
  // was when it started). test/unit/reconcile-flush-race.test.ts
  try {
    await x.durably('outcome produce', () => d.producer.send(out));
    await x.durably('retry scheduling', apply);
  } catch (e) {
    x.recent.settle(attemptedOf(part), e);
    throw e;
  }
  x.recent.settle(attemptedOf(part));
  durableStages(d.stages, part, d.clock.now());
  notifyFirstOutcomes(d.outcomes, part, d.log);
};
