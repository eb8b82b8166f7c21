import type { WebhookState, WebhookStatus } from '../domain/status';
import type { DeadLetterStore } from '../ports/hot-state';
import type { LogProducer } from '../ports/log';
import type { DeadLetterEntry } from '../ports/recovery';
import { readDeadLetter } from '../records/dead-letter';

// Dead letters as the hot state keeps them: indexed for GET /deadletter, the body kept for
// retry and replay. Kafka's howk.deadletter stays the truth; the rebuild replays it.

/**
 * The index entry of a dead-letter record, or null for records that name no webhook and
 * config (undecodable records: they stay on the topic, where nothing can replay them anyway).
 */
export const deadLetterEntryOf = (record: string): DeadLetterEntry | null => {
  const v = readDeadLetter(record);
  if (!v || typeof v.webhook_id !== 'string' || typeof v.config_id !== 'string' || typeof v.reason_type !== 'string') return null;
  const deadAtMs = typeof v.dead_at === 'string' ? Date.parse(v.dead_at) : NaN;
  if (!Number.isFinite(deadAtMs) || !/^[A-Za-z0-9_.-]{1,64}$/.test(v.reason_type)) return null;
  return { webhookId: v.webhook_id, configId: v.config_id, reasonType: v.reason_type, deadAtMs, record };
};

const int = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isInteger(v) ? v : fallback);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/**
 * The terminal status a dead letter stands for. Its stamp is the first nanosecond of the
 * dead_at millisecond: never newer than the status the worker wrote at that moment, so a
 * rebuild cannot overwrite a live status with it, only fill in a lost one.
 */
export const deadStatusOf = (e: DeadLetterEntry): WebhookStatus | null => {
  const v = readDeadLetter(e.record);
  const w = v?.webhook;
  if (!v || !w || typeof w !== 'object') return null;
  const endpoint = str(w.endpoint);
  const endpointHash = str(w.endpoint_hash);
  const createdAt = str(w.created_at);
  if (!endpoint || !endpointHash || !createdAt) return null;
  const state: WebhookState = e.reasonType === 'exhausted' ? 'exhausted' : 'failed';
  const replayOf = str(w.replay_of);
  return {
    webhook_id: e.webhookId,
    config_id: e.configId,
    endpoint,
    endpoint_hash: endpointHash,
    state,
    attempts: int(w.attempt, 0) + int(w.deferrals, 0) + 1,
    max_attempts: int(w.max_attempts, 1),
    created_at: createdAt,
    last_attempt_at: new Date(e.deadAtMs).toISOString(),
    last_status_code: typeof v.last_status_code === 'number' ? v.last_status_code : null,
    last_error: str(v.last_error),
    next_retry_at: null,
    dead_reason: e.reasonType,
    ...(replayOf ? { replay_of: replayOf } : {}),
    updated_at_ns: `${e.deadAtMs}000000`,
  };
};

/** Progress (attempt + deferrals) of the attempt that died, as core/reconcile/replay.ts counts it. */
export const deadProgress = (e: DeadLetterEntry): number => {
  const w = readDeadLetter(e.record)?.webhook;
  return w ? int(w.attempt, 0) + int(w.deferrals, 0) : 0;
};

/**
 * A producer that, once dead letters are acknowledged by the log, also indexes them in the
 * hot state, so they are listable at once. Its send fails when either fails, and the
 * deliverer retries it in place; a retry of the same records (the same array) skips the
 * produce that already succeeded, so Redis being away does not duplicate Kafka records.
 */
export const indexingDeadLetters = (inner: LogProducer, hot: DeadLetterStore, deadletterTopic: string): LogProducer => {
  const produced = new WeakSet<object>();
  return {
    send: async (records) => {
      if (!produced.has(records)) {
        await inner.send(records);
        produced.add(records);
      }
      const entries: DeadLetterEntry[] = [];
      for (const r of records) {
        if (r.topic !== deadletterTopic || r.value === null) continue;
        const e = deadLetterEntryOf(r.value);
        if (e) entries.push(e);
      }
      if (entries.length) await hot.putDeadLetters(entries);
    },
    close: () => inner.close(),
  };
};
