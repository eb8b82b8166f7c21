import type { Config } from '../config/schema';
import type { DeadLetter, DeliveryResult } from '../domain/records';
import type { AttemptRecord, WebhookState, WebhookStatus } from '../domain/status';
import { iso, nowNs } from '../domain/time';
import { decodeWebhook, encodeWebhook, type Webhook } from '../domain/webhook';
import { errorMessage } from '../errors/errors';
import { classify } from '../policy/classify';
import { decide, type Decision } from '../policy/retry';
import type { Clock } from '../ports/clock';
import type { HotState, RetryEntry, StatusWrite } from '../ports/hot-state';
import type { ConsumedBatch, LogProducer, LogRecord } from '../ports/log';
import type { DeliveryResponse, Sender } from '../ports/sender';
import { signatureHeaders } from '../signing/outbound';
import type { SecretBox } from '../signing/secret-box';
import { runKeyed, semaphore } from './limiter';
import type { Logger } from './logger';
import { redactWebhook } from './redact';

export type DeliverDeps = {
  config: Config;
  sender: Sender;
  hot: HotState;
  producer: LogProducer;
  clock: Clock;
  log: Logger;
  secretBox?: SecretBox;
  random?: () => number;
};

type Outcome = { webhook: Webhook; response: DeliveryResponse; at: number; decision: Decision };

const responseError = (r: DeliveryResponse): string | null =>
  r.kind === 'response' ? (r.status >= 200 && r.status < 300 ? null : `HTTP ${r.status}`) : `${r.kind}: ${r.error}`;

const STATE: Record<Decision['kind'], WebhookState> = { delivered: 'delivered', retry: 'retrying', dead: 'failed' };

/**
 * Delivers one consumed batch and makes every outcome durable before returning: results,
 * dead letters and state records in one produce, retries/status/stats in one hot-state
 * round trip. The consumer commits the batch's offsets only after this resolves.
 */
export const createDeliverer = (d: DeliverDeps) => {
  const { config } = d;
  const rand = d.random ?? Math.random;
  const gate = semaphore(config.delivery.max_concurrency);
  const topics = config.kafka.topics;

  const secretsOf = async (w: Webhook): Promise<string[]> => {
    if (w.signing_secret && d.secretBox) return [await d.secretBox.open(w.signing_secret)];
    return config.signing.default_secret ? [config.signing.default_secret] : [];
  };

  const attemptOne = async (w: Webhook): Promise<Outcome> => {
    const sent = d.clock.now();
    let response: DeliveryResponse;
    try {
      const sig = await signatureHeaders({ id: w.id, attempt: w.attempt, timestamp: Math.floor(sent / 1000), body: w.payload, secrets: await secretsOf(w), scheme: config.signing.scheme });
      response = await gate(() =>
        d.sender.send({
          url: w.endpoint,
          headers: { ...w.headers, 'content-type': 'application/json', 'user-agent': config.delivery.user_agent, ...sig },
          body: w.payload,
          timeoutMs: config.delivery.timeout,
        }),
      );
    } catch (e) {
      response = { kind: 'network', error: errorMessage(e), durationMs: d.clock.now() - sent };
    }
    const at = d.clock.now();
    const c = classify(response.kind === 'response' ? { kind: 'response', status: response.status, retryAfter: response.retryAfter } : { kind: response.kind, error: response.error }, at, config.retry.retry_on_status);
    return { webhook: w, response, at, decision: decide(w, c, at, config.retry, rand()) };
  };

  const toRecords = (o: Outcome, ns: string) => {
    const { webhook: w, response: r, decision } = o;
    const status_code = r.kind === 'response' ? r.status : null;
    const error = responseError(r);
    const next_retry_at = decision.kind === 'retry' ? iso(decision.dueAt) : null;
    const outcome: AttemptRecord['outcome'] =
      decision.kind === 'delivered' ? 'delivered' : decision.kind === 'retry' ? (decision.deferred ? 'deferred' : 'retry') : decision.reason_type;
    const result: DeliveryResult = {
      webhook_id: w.id, config_id: w.config_id, endpoint: w.endpoint, endpoint_hash: w.endpoint_hash,
      attempt: w.attempt + 1, outcome, success: decision.kind === 'delivered', status_code, error,
      duration_ms: r.durationMs, next_retry_at, timestamp: iso(o.at),
    };
    const attempts = w.attempt + w.deferrals + 1;
    const status: WebhookStatus = {
      webhook_id: w.id, config_id: w.config_id, endpoint: w.endpoint, endpoint_hash: w.endpoint_hash,
      state: decision.kind === 'dead' && decision.reason_type === 'exhausted' ? 'exhausted' : STATE[decision.kind],
      attempts, max_attempts: w.max_attempts, created_at: w.created_at, last_attempt_at: iso(o.at),
      last_status_code: status_code, last_error: error, next_retry_at,
      ...(decision.kind === 'dead' ? { dead_reason: decision.reason_type } : {}),
      ...(w.replay_of ? { replay_of: w.replay_of } : {}),
      updated_at_ns: ns,
    };
    const attempt: AttemptRecord = { attempt: attempts, at: iso(o.at), outcome, status_code, error, duration_ms: r.durationMs };
    return { result, status, attempt };
  };

  const deadLetterValue = (o: Outcome, reason_type: DeadLetter['reason_type'], reason: string): string => {
    const r = o.response;
    const dl: Omit<DeadLetter, 'webhook'> = {
      webhook_id: o.webhook.id, config_id: o.webhook.config_id, reason, reason_type,
      last_status_code: r.kind === 'response' ? r.status : null, last_error: responseError(r),
      last_response: r.kind === 'response' ? r.bodySnippet.slice(0, 1024) : null, dead_at: iso(o.at),
    };
    // The webhook is spliced in raw so that a replay sends the original bytes.
    return `${JSON.stringify(dl).slice(0, -1)},"webhook":${encodeWebhook(redactWebhook(o.webhook))}}`;
  };

  const invalidRecord = (value: string | null, e: unknown, at: number): LogRecord => ({
    topic: topics.deadletter,
    key: null,
    value: JSON.stringify({ reason_type: 'invalid_record', reason: `undecodable record: ${errorMessage(e)}`, dead_at: iso(at), raw: (value ?? '').slice(0, 1024) }),
  });

  return async (batch: ConsumedBatch): Promise<void> => {
    const records: LogRecord[] = [];
    const hooks: Webhook[] = [];
    for (const rec of batch.records) {
      try {
        hooks.push(decodeWebhook(rec.value ?? ''));
      } catch (e) {
        d.log.error('undecodable record dead-lettered', { topic: rec.topic, partition: rec.partition, offset: rec.offset });
        records.push(invalidRecord(rec.value, e, d.clock.now()));
      }
    }
    const outcomes: Outcome[] = [];
    await runKeyed(hooks, (w) => w.config_id, config.kafka.per_key_parallelism, async (w) => {
      outcomes.push(await attemptOne(w));
    });

    const statuses: StatusWrite[] = [];
    const retries: RetryEntry[] = [];
    const counts = { delivered: 0, failed: 0, exhausted: 0, dead_lettered: 0, retried: 0 };
    for (const o of outcomes) {
      const ns = nowNs(o.at);
      const { result, status, attempt } = toRecords(o, ns);
      const w = o.webhook;
      records.push({ topic: topics.results, key: w.id, value: JSON.stringify(result) });
      statuses.push({ status, attempt });
      const hadSnapshot = w.attempt > 0 || w.deferrals > 0;
      if (!result.success) counts.failed++;
      if (o.decision.kind === 'delivered') {
        counts.delivered++;
        if (hadSnapshot) records.push({ topic: topics.state, key: w.id, value: null });
      } else if (o.decision.kind === 'retry') {
        counts.retried++;
        const data = encodeWebhook(o.decision.next);
        retries.push({ id: w.id, dueAt: o.decision.dueAt, data });
        const snapshot = JSON.stringify({ webhook_id: w.id, state: 'retrying', next_retry_at: iso(o.decision.dueAt), updated_at_ns: ns, status });
        records.push({ topic: topics.state, key: w.id, value: `${snapshot.slice(0, -1)},"webhook":${data}}` });
      } else {
        counts.dead_lettered++;
        if (o.decision.reason_type === 'exhausted') counts.exhausted++;
        records.push({ topic: topics.deadletter, key: w.id, value: deadLetterValue(o, o.decision.reason_type, o.decision.reason) });
        if (hadSnapshot) records.push({ topic: topics.state, key: w.id, value: null });
        d.log.info('webhook dead-lettered', { webhook_id: w.id, config_id: w.config_id, reason_type: o.decision.reason_type, attempts: status.attempts });
      }
    }
    // Both must succeed before the batch's offsets are committed (at-least-once).
    await Promise.all([
      d.producer.send(records),
      d.hot.apply({ statuses, retries, stats: { at: d.clock.now(), counts, endpoints: [] } }),
    ]);
  };
};

export type Deliverer = ReturnType<typeof createDeliverer>;
