import type { Config } from '../config/schema';
import type { AttemptRecord } from '../domain/status';
import { iso, nowNs } from '../domain/time';
import { encodeWebhook, type Webhook } from '../records/webhook';
import { outcomeClass } from '../metrics/events';
import type { RetryEntry, StatName, StatusPatch, StatusWrite } from '../ports/hot-state';
import type { LogRecord } from '../ports/log';
import type { Logger } from '../ports/logger';
import type { AttemptDeps, Step } from './attempt';
import { attemptRecords, deadLetterValue, heldEntry } from './outcome-records';
import { snapshotValue } from '../records/state';

/**
 * The records and hot-state writes of some steps of a batch: results, dead letters, lane moves
 * and state records go to `records`; statuses, retries, ended webhooks and stat counts are
 * returned.
 */
export const collector = (d: Pick<AttemptDeps, 'events'> & { log: Logger }, topics: Config['kafka']['topics']) => (steps: Step[], records: LogRecord[]) => {
  const statuses: StatusWrite[] = [];
  const retries: RetryEntry[] = [];
  // Terminal outcomes: a retry still scheduled for them (a stale copy) is removed.
  const ended: string[] = [];
  const counts: Partial<Record<StatName, number>> = {};
  const count = (n: StatName) => (counts[n] = (counts[n] ?? 0) + 1);
  const hold = (w: Webhook, at: number, fields: Omit<StatusPatch, 'webhook_id' | 'updated_at_ns'>, attempt?: AttemptRecord): StatusPatch => {
    const patch: StatusPatch = { webhook_id: w.id, updated_at_ns: nowNs(at), ...fields };
    statuses.push({ status: patch, patch: true, ...(attempt ? { attempt } : {}) });
    return patch;
  };
  for (const s of steps) {
    if (s.kind === 'attempted') {
      const { o } = s;
      const w = o.webhook;
      const ns = nowNs(o.at);
      const { result, status, attempt } = attemptRecords(o, ns);
      if (d.events) {
        d.events.attempt(outcomeClass(o.response), o.response.durationMs);
        d.events.decided(o.decision);
      }
      records.push({ topic: topics.results, key: w.id, value: result });
      statuses.push({ status, attempt });
      if (o.decision.kind !== 'delivered') count('failed');
      // Any terminal outcome ends the webhook on howk.state: a webhook parked or paused at
      // attempt 0 has a snapshot too, and without a tombstone a rebuild would resurrect it.
      // Even a first attempt never held in this pass writes it: the record may be consumed
      // again (a batch left uncommitted) after an earlier pass wrote a snapshot of it, and
      // `ended` then removes the stale retry that would have brought the tombstone
      // (docs/ARCHITECTURE.md, State topic).
      if (o.decision.kind === 'delivered') {
        count('delivered');
        ended.push(w.id);
        records.push({ topic: topics.state, key: w.id, value: null });
      } else if (o.decision.kind === 'retry') {
        count('retried');
        const data = encodeWebhook(o.decision.next);
        retries.push({ id: w.id, dueAt: o.decision.dueAt, data });
        records.push({ topic: topics.state, key: w.id, value: snapshotValue(o.decision.next, status, o.decision.dueAt, data) });
      } else {
        count('dead_lettered');
        ended.push(w.id);
        if (o.decision.reason_type === 'exhausted') count('exhausted');
        records.push({ topic: topics.deadletter, key: w.id, value: deadLetterValue(o, o.decision.reason_type, o.decision.reason) });
        records.push({ topic: topics.state, key: w.id, value: null });
        d.log.info('webhook dead-lettered', { webhook_id: w.id, config_id: w.config_id, reason_type: o.decision.reason_type, attempts: status.attempts });
      }
    } else if (s.kind === 'parked') {
      // Held back without spending an attempt: back in the retry schedule at `until`.
      const w = s.webhook;
      const data = encodeWebhook(w);
      retries.push({ id: w.id, dueAt: s.until, data });
      // The history says why no attempt was spent, and until when (the console's Inspector).
      const entry = heldEntry(w, s.at, s.reason, s.until);
      const patch = hold(w, s.at, { state: w.attempt + w.deferrals > 0 ? 'retrying' : 'pending', held: s.reason, next_retry_at: iso(s.until) }, entry);
      records.push({ topic: topics.state, key: w.id, value: snapshotValue(w, patch, s.until, data) });
    } else if (s.kind === 'known') {
      // Made before: its outcome is written by the pass that made it.
      continue;
    } else if (s.kind === 'diverted') {
      records.push({ topic: topics.slow, key: s.webhook.config_id, value: encodeWebhook(s.webhook) });
      hold(s.webhook, s.at, { held: 'slow_lane' });
    } else if (s.kind === 'returned') {
      records.push({ topic: topics.pending, key: s.webhook.config_id, value: encodeWebhook(s.webhook) });
      hold(s.webhook, s.at, { held: null });
    } else {
      // Held by a pause (a Redis queue); the snapshot lets a rebuild put it back.
      const patch = hold(s.webhook, s.at, { held: 'paused', next_retry_at: null });
      records.push({ topic: topics.state, key: s.webhook.id, value: snapshotValue(s.webhook, patch, s.at) });
    }
  }
  return { statuses, retries, ended, counts };
};
