import type { Config } from '../config/schema';
import { decodeWebhook, webhookKey } from '../records/webhook';
import { deadLetterKey, invalidRecordValue } from '../records/dead-letter';
import { errorMessage } from '../errors/errors';
import type { Clock } from '../ports/clock';
import type { RetrySchedule, ShardLeases } from '../ports/hot-state';
import type { LogProducer } from '../ports/log';
import { sleep } from '../domain/time';
import { RESCHEDULED_HEADERS } from './sent-marks';
import type { Logger } from '../ports/logger';

export type SchedulerDeps = { config: Config; hot: RetrySchedule; producer: LogProducer; clock: Clock; log: Logger };

/**
 * One scheduler pass: claim due retries under a lease (from `shards`, default all), produce
 * them to the pending topic in one send, then ack. A scheduler that dies between claim and ack
 * loses nothing: the lease runs out and another pass claims the same retries (at-least-once).
 * Returns how many webhooks were moved.
 */
export const createSchedulerTick =
  (d: SchedulerDeps) =>
  async (shards?: readonly number[]): Promise<number> => {
    const { scheduler, kafka } = d.config;
    const claimed = await d.hot.claimDueRetries(d.clock.now(), scheduler.batch_size, scheduler.lease, shards);
    if (!claimed.length) return 0;
    const records = [];
    for (const r of claimed) {
      try {
        const w = decodeWebhook(r.data);
        // Its pass may have been answered already (a handoff lease that ran out under a dead
        // worker): the worker looks its sent mark up before sending (sent-marks.ts).
        records.push({ topic: kafka.topics.pending, key: webhookKey(w), value: r.data, headers: RESCHEDULED_HEADERS });
      } catch (e) {
        // It can never be delivered; keep it where operators look for failures.
        d.log.error('unreadable retry record dead-lettered', { webhook_id: r.id, error: errorMessage(e) });
        records.push({
          topic: kafka.topics.deadletter,
          key: deadLetterKey(r.id),
          value: invalidRecordValue(r.data, e, d.clock.now(), { webhookId: r.id, what: 'unreadable retry record' }),
        });
      }
    }
    await d.producer.send(records);
    await d.hot.ackRetries(claimed.map((r) => ({ id: r.id, leaseDueAt: r.dueAt })));
    return records.length;
  };

/** A scheduler's name among the live ones (its shard leases carry it). */
const ownerId = (): string => `scheduler-${globalThis.crypto.randomUUID()}`;

/**
 * Runs passes until `signal` aborts; drains back-to-back while full batches come out. Each
 * pass moves the due retries of the shards this scheduler holds (core/domain/shard-leases.ts:
 * its leases are renewed every third of scheduler.shard_lease and given back when it stops);
 * the holder of shard 0 also drains the schedule kept before the shards into them.
 */
export const runScheduler = async (d: SchedulerDeps & { hot: ShardLeases; owner?: string }, signal: AbortSignal): Promise<void> => {
  const tick = createSchedulerTick(d);
  const { batch_size, poll_interval, shard_lease } = d.config.scheduler;
  const owner = d.owner ?? ownerId();
  let held: number[] = [];
  let heldAt = -Infinity;
  try {
    while (!signal.aborted) {
      let moved = 0;
      try {
        if (d.clock.now() - heldAt >= shard_lease / 3) {
          held = await d.hot.holdShards(owner, d.clock.now(), shard_lease);
          heldAt = d.clock.now();
        }
        if (held[0] === 0) await d.hot.drainLegacyRetries(batch_size);
        if (held.length) moved = await tick(held);
      } catch (e) {
        d.log.warn('scheduler pass failed; retrying', { error: errorMessage(e) });
      }
      if (moved < batch_size) await sleep(Math.min(poll_interval, shard_lease / 3), signal);
    }
  } finally {
    await d.hot
      .releaseShards(owner)
      .catch((e: unknown) => d.log.warn('scheduler could not give its shards back; they are taken over when the lease runs out', { error: errorMessage(e) }));
  }
};
