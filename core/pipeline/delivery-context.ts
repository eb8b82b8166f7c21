import type { Config } from '../config/schema';
import type { Lane, Webhook } from '../domain/webhook';
import type { Clock } from '../ports/clock';
import type { EndedLookup, HotState } from '../ports/hot-state';
import type { LogProducer } from '../ports/log';
import type { Logger } from '../ports/logger';
import type { OutcomeBus } from '../ports/outcome-bus';
import { createAttempter, type AttemptDeps, type Step } from './attempt';
import { durablyWith } from './durably';
import { createHandoff } from './handoff';
import { createLeaseKeeper } from './lease-keeper';
import { collector } from './outcome-collect';
import { createOwedWrites } from './owed-writes';
import { attemptHoldingPauses } from './pause-hold';
import { createRecentOutcomes, type RecentOutcomes } from './recent-outcomes';
import { createRunningCopies } from './running-copies';
import { createSentMarks } from './sent-marks';

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

export const attemptedOf = (steps: readonly Step[]): Webhook[] => steps.flatMap((s) => (s.kind === 'attempted' ? [s.o.webhook] : []));

/**
 * What one deliverer (one lane of a worker) keeps across its batches: the stages' parts, the
 * config lanes still running (`tails`, `cuts`, `moved`) and whether it is stopping.
 */
export const deliveryContext = (d: DeliverDeps, lane: Lane) => {
  const { config } = d;
  const state = { stopping: false };
  const isStopping = () => state.stopping;
  const attempter = createAttempter({ ...d, isStopping });
  const durably = durablyWith(d.log, isStopping);
  const recent = d.recent ?? createRecentOutcomes(config.delivery.recent_outcomes);
  const durable = (steps: readonly Step[]) => recent.settle(attemptedOf(steps));
  return {
    d,
    config,
    topics: config.kafka.topics,
    lane,
    state,
    attempter,
    durably,
    attemptOne: attemptHoldingPauses({ ...d, attempter, durably }, lane),
    owed: createOwedWrites(d.hot, d.log, config.degraded.max_owed_statuses),
    lookup: { lookupRetryMs: config.degraded.enabled ? config.degraded.recheck_interval : undefined, isStopping, away: attempter.guardsAway },
    collect: collector(d, config.kafka.topics),
    recent,
    handoff: createHandoff({ hot: d.hot, producer: d.producer, log: d.log, stages: d.stages, clock: d.clock, outcomes: d.outcomes, durable }),
    leases: createLeaseKeeper({ hot: d.hot, clock: d.clock, log: d.log, leaseMs: config.delivery.handoff_lease }),
    copies: createRunningCopies(),
    marks: createSentMarks(config.delivery.sent_marks ? d.ended : undefined, d.log, d.clock),
    /** Per-key lanes outlive a batch when its stragglers are handed off: the next batch's webhooks of that key queue behind them. */
    tails: new Map<string, Promise<void>>(),
    cuts: new Set<() => void>(),
    /** When each config's lane last finished a step, in any batch: a lane queued behind the tail of an earlier batch is moving as long as that tail is. */
    moved: new Map<string, number>(),
  };
};

export type DeliveryCtx = ReturnType<typeof deliveryContext>;
