import type { Config } from '../config/schema';
import { decodeWebhook, webhookKey } from '../records/webhook';
import { deadLetterKey, invalidRecordValue } from '../records/dead-letter';
import { errorMessage } from '../errors/errors';
import type { Clock } from '../ports/clock';
import type { RetrySchedule } from '../ports/hot-state';
import type { LogProducer } from '../ports/log';
import { sleep } from '../domain/time';
import type { Logger } from '../ports/logger';

export type SchedulerDeps = { config: Config; hot: RetrySchedule; producer: LogProducer; clock: Clock; log: Logger };

/**
 * One scheduler pass: claim due retries under a lease, produce them to the pending topic
 * in one send, then ack. A scheduler that dies between claim and ack loses nothing: the
 * lease runs out and another pass claims the same retries (at-least-once). Returns how
 * many webhooks were moved.
 */
export const createSchedulerTick = (d: SchedulerDeps) => async (): Promise<number> => {
  const { scheduler, kafka } = d.config;
  const claimed = await d.hot.claimDueRetries(d.clock.now(), scheduler.batch_size, scheduler.lease);
  if (!claimed.length) return 0;
  const records = [];
  for (const r of claimed) {
    try {
      const w = decodeWebhook(r.data);
      records.push({ topic: kafka.topics.pending, key: webhookKey(w), value: r.data });
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

/** Runs ticks until `signal` aborts; drains back-to-back while full batches come out. */
export const runScheduler = async (d: SchedulerDeps, signal: AbortSignal): Promise<void> => {
  const tick = createSchedulerTick(d);
  while (!signal.aborted) {
    let moved = 0;
    try {
      moved = await tick();
    } catch (e) {
      d.log.warn('scheduler pass failed; retrying', { error: errorMessage(e) });
    }
    if (moved < d.config.scheduler.batch_size) await sleep(d.config.scheduler.poll_interval, signal);
  }
};
