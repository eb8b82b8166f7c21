import type { Config } from '../config/schema';
import { webhookId } from '../domain/ids';
import { TERMINAL_STATES, type WebhookStatus } from '../domain/status';
import { iso, nowNs } from '../domain/time';
import { encodeWebhook, webhookKey, type Webhook } from '../records/webhook';
import { HowkError, NotFoundError } from '../errors/errors';
import { pendingStatus } from '../pipeline/enqueue';
import { ownerOf } from '../pipeline/idempotency';
import type { Logger } from '../ports/logger';
import type { Clock } from '../ports/clock';
import type { DeadLetterStore, HotWriter, IdempotencyStore, StatusReader } from '../ports/hot-state';
import type { LogProducer } from '../ports/log';
import type { SecretBox } from '../signing/secret-box';
import { deadLetterEntryOf, deadStatusOf } from './deadletters';
import { snapshotValue, stateKey } from '../records/state';
import { deadLetterWebhook } from '../records/dead-letter';

// Retry and replay (docs/RELIABILITY.md): a retry is a new attempt of the same webhook (same id, the
// attempt number goes on); a replay is a new webhook that records `replay_of`, and the
// original, its status, history and dead letter are never touched. Both take the body
// from the webhook's dead letter (kept in the hot state, rebuilt from howk.deadletter).

/** The webhook cannot be retried now (it is still scheduled, or its body is gone). HTTP 409. */
export class RedriveConflictError extends HowkError {}

export type RedriveOptions = {
  /** Headers to set again: a dead letter keeps secret-looking headers only as '[redacted]'. */
  headers?: Record<string, string>;
  /** A per-request signing secret to use again (dead letters never keep one). */
  signing_secret?: string;
  /** Retry: attempts this retry may make (default 1). Replay: the new webhook's max_attempts. */
  attempts?: number;
  /** Replay only: a repeated key returns the first replay instead of making another. */
  idempotency_key?: string;
};

export type RedriveResult = { webhook_id: string; status: 'pending' | 'duplicate'; attempt?: number; replay_of?: string; dropped_headers: string[] };

export type RedriveDeps = {
  config: Config;
  hot: StatusReader & DeadLetterStore & IdempotencyStore & HotWriter;
  producer: LogProducer;
  clock: Clock;
  log: Logger;
  secretBox?: SecretBox;
};

/** What core/pipeline/redact.ts puts in place of a secret-looking header value. */
const REDACTED = '[redacted]';
const RETRY_CLAIM_TTL = 60_000;
// Config ids cannot hold '~': this namespace never meets a producer's idempotency key.
const RETRY_CLAIMS = '~retry';

/** Headers fit to send again: redacted values dropped (named), the caller's on top. */
export const resendHeaders = (stored: Record<string, string>, given: Record<string, string> = {}) => {
  const headers: Record<string, string> = {};
  const dropped: string[] = [];
  const givenLower = new Set(Object.keys(given).map((k) => k.toLowerCase()));
  for (const [k, v] of Object.entries(stored)) {
    if (givenLower.has(k.toLowerCase())) continue;
    if (v === REDACTED) dropped.push(k);
    else headers[k] = v;
  }
  return { headers: { ...headers, ...given }, dropped };
};

/**
 * The attempt a retry makes: past every attempt made so far (the status counts attempts
 * plus deferrals), so its progress is more than anything recorded before - which is what
 * lets a rebuild tell it from a superseded attempt (core/reconcile/replay.ts, rule 2).
 */
export const retryAttempt = (w: Pick<Webhook, 'attempt' | 'deferrals'>, status: Pick<WebhookStatus, 'attempts'> | null): number =>
  Math.max(w.attempt + 1, (status?.attempts ?? 0) - w.deferrals);

export const createRedriver = (d: RedriveDeps) => {
  const topics = d.config.kafka.topics;

  const seal = async (secret: string | undefined): Promise<string | undefined> => {
    if (secret === undefined) return undefined;
    if (!d.secretBox) throw new HowkError('invalid_request', 'signing_secret needs HOWK_SECRETS_KEY to be set on the server (secrets never travel in plaintext)');
    return d.secretBox.seal(secret);
  };

  const retry = async (id: string, o: RedriveOptions = {}): Promise<RedriveResult> => {
    const [status, record] = await Promise.all([d.hot.getStatus(id), d.hot.getDeadLetter(id)]);
    if (!status && !record) throw new NotFoundError(`webhook ${id}`);
    if (status && !TERMINAL_STATES.has(status.state)) {
      throw new RedriveConflictError(
        'not_terminal',
        `webhook ${id} is ${status.state}: it is attempted ${status.next_retry_at ? `again at ${status.next_retry_at}` : 'shortly'} without a retry`,
      );
    }
    if (!record) throw new RedriveConflictError('body_unavailable', `webhook ${id} is ${status!.state}; its body is kept only while it is retrying or dead-lettered`);
    const dead = deadLetterWebhook(record);
    const attempt = retryAttempt(dead, status);
    const token = `${id}#${crypto.randomUUID()}`;
    const [owner] = await d.hot.claimIdempotency([{ configId: RETRY_CLAIMS, key: `${id}:${attempt}`, webhookId: token }], RETRY_CLAIM_TTL);
    if (owner !== token) throw new RedriveConflictError('retry_in_progress', `a retry of webhook ${id} (attempt ${attempt + 1}) is already under way`);
    const now = d.clock.now();
    const { headers, dropped } = resendHeaders(dead.headers, o.headers);
    const sealed = await seal(o.signing_secret);
    const { signing_secret: _none, ...base } = dead;
    const w: Webhook = { ...base, headers, attempt, max_attempts: attempt + (o.attempts ?? 1), scheduled_at: iso(now), ...(sealed ? { signing_secret: sealed } : {}) };
    const entry = status ? null : deadLetterEntryOf(record);
    const { history: _history, ...stored } = status ?? { history: [] };
    const before: WebhookStatus | null = status ? (stored as WebhookStatus) : entry ? deadStatusOf(entry) : null;
    const ns = nowNs(now);
    // The status says it is on its way again; its history keeps every earlier attempt.
    const next: WebhookStatus | null = before ? { ...before, state: 'pending', max_attempts: w.max_attempts, next_retry_at: null, dead_reason: null, updated_at_ns: ns } : null;
    try {
      // With a snapshot: a rebuild must know the webhook went on after its dead letter.
      await d.producer.send([
        { topic: topics.pending, key: webhookKey(w), value: encodeWebhook(w) },
        { topic: topics.state, key: stateKey(w), value: snapshotValue(w, next ?? { updated_at_ns: ns, state: 'pending' }, now) },
      ]);
    } catch (e) {
      await d.hot.releaseIdempotency([{ configId: RETRY_CLAIMS, key: `${id}:${attempt}`, webhookId: token }]).catch(() => {});
      throw e;
    }
    if (next) await d.hot.apply({ statuses: [{ status: next }] }).catch((e) => d.log.warn('status write after retry failed', { webhook_id: id, error: String(e) }));
    d.log.info('webhook retried', { webhook_id: id, attempt: attempt + 1 });
    return { webhook_id: id, status: 'pending', attempt: attempt + 1, dropped_headers: dropped };
  };

  const replay = async (id: string, o: RedriveOptions = {}): Promise<RedriveResult> => {
    const record = await d.hot.getDeadLetter(id);
    if (!record) throw new NotFoundError(`dead letter of webhook ${id}`);
    const dead = deadLetterWebhook(record);
    const now = d.clock.now();
    const fresh = webhookId(now);
    if (o.idempotency_key) {
      const [held] = await d.hot.claimIdempotency([{ configId: dead.config_id, key: o.idempotency_key, webhookId: fresh }], d.config.ttl.idempotency_ttl).catch(() => [fresh]);
      // A key an enqueue claimed holds its fingerprint too (core/pipeline/idempotency.ts).
      const owner = ownerOf(held!).id;
      if (owner !== fresh) return { webhook_id: owner, status: 'duplicate', replay_of: id, dropped_headers: [] };
    }
    const { headers, dropped } = resendHeaders(dead.headers, o.headers);
    const sealed = await seal(o.signing_secret);
    const { signing_secret: _none, idempotency_key: _key, ...base } = dead;
    const w: Webhook = {
      ...base,
      id: fresh,
      headers,
      attempt: 0,
      deferrals: 0,
      max_attempts: o.attempts ?? dead.max_attempts,
      created_at: iso(now),
      scheduled_at: iso(now),
      replay_of: id,
      ...(o.idempotency_key ? { idempotency_key: o.idempotency_key } : {}),
      ...(sealed ? { signing_secret: sealed } : {}),
    };
    try {
      await d.producer.send([{ topic: topics.pending, key: webhookKey(w), value: encodeWebhook(w) }]);
    } catch (e) {
      if (o.idempotency_key) await d.hot.releaseIdempotency([{ configId: w.config_id, key: o.idempotency_key, webhookId: fresh }]).catch(() => {});
      throw e;
    }
    await d.hot
      .apply({ statuses: [{ status: pendingStatus(w, nowNs(now)) }] })
      .catch((e) => d.log.warn('status write after replay failed', { webhook_id: fresh, error: String(e) }));
    d.log.info('dead letter replayed', { webhook_id: fresh, replay_of: id });
    return { webhook_id: fresh, status: 'pending', replay_of: id, dropped_headers: dropped };
  };

  return { retry, replay };
};

export type Redriver = ReturnType<typeof createRedriver>;
