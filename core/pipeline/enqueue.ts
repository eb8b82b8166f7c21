import type { Config } from '../config/schema';
import { endpointHash, webhookId } from '../domain/ids';
import { iso, nowNs } from '../domain/time';
import type { Webhook } from '../domain/webhook';
import type { WebhookStatus } from '../domain/status';
import { ValidationError, errorMessage } from '../errors/errors';
import { claimKeyed, commitKeyed, releaseKeyed, requestFingerprint, type KeyedHook } from './idempotency';
import type { EnqueueItem, EnqueueResult } from '../domain/enqueue';
import type { PipelineEvents } from '../metrics/events';
import { TRACEPARENT, type TraceSpan, type Tracing } from '../ports/tracing';
import type { StageRecorder } from '../metrics/stages';
import type { Clock } from '../ports/clock';
import type { HotWriter, IdempotencyStore } from '../ports/hot-state';
import type { LogProducer, LogRecord } from '../ports/log';
import type { SecretBox } from '../signing/secret-box';
import type { Logger } from '../ports/logger';
import { encodeWebhook, webhookKey } from '../records/webhook';
import { pendingWriter } from './pending-writes';

/** With api.status_linger, the most 'pending' statuses that wait for Redis while their enqueues are answered. */
export const MAX_UNANSWERED_WAITING = 10_000;

/** A request that waits for the first attempts (?wait=): its listener marks the new webhooks, which it watches before they are produced. */
export type EnqueueOptions = { awaitedBy?: string; beforeProduce?: (ids: string[]) => void };

export type EnqueueDeps = {
  config: Config;
  producer: LogProducer;
  hot: IdempotencyStore & HotWriter;
  clock: Clock;
  secretBox?: SecretBox;
  log: Logger;
  /** Records the 'produced' stage (enqueue call → Kafka's acknowledgement) per webhook. */
  stages?: StageRecorder;
  /** Webhooks accepted and duplicates counted (core/metrics/events.ts). */
  events?: PipelineEvents;
  /** Each new webhook starts its trace here (core/ports/tracing.ts); none without it. */
  tracing?: Tracing;
  /**
   * api.status_linger: the 'pending' statuses are gathered this long into one Redis write and
   * the answer does not wait for it (read them after `settle()`); 0 or none: each request
   * writes its own, before it answers.
   */
  statusLingerMs?: number;
};

export const pendingStatus = (w: Webhook, ns: string): WebhookStatus => ({
  webhook_id: w.id,
  config_id: w.config_id,
  endpoint: w.endpoint,
  endpoint_hash: w.endpoint_hash,
  state: 'pending',
  attempts: 0,
  max_attempts: w.max_attempts,
  created_at: w.created_at,
  last_attempt_at: null,
  last_status_code: null,
  last_error: null,
  next_retry_at: null,
  ...(w.replay_of ? { replay_of: w.replay_of } : {}),
  updated_at_ns: ns,
});

/** The Webhook record of an item, its id, stamp, endpoint hash and sealed secret given (its record: core/records/webhook.ts). */
const webhookOf = (config: Config, configId: string, item: EnqueueItem, id: string, at: string, hash: string, sealed: string | undefined): Webhook => ({
  id,
  config_id: configId,
  endpoint: item.endpoint,
  endpoint_hash: hash,
  payload: item.payload,
  headers: item.headers,
  ...(item.raw ? { body_base64: item.raw.body_base64, content_type: item.raw.content_type } : {}),
  ...(item.idempotency_key ? { idempotency_key: item.idempotency_key } : {}),
  ...(sealed ? { signing_secret: sealed } : {}),
  ...(item.delivery_headers ? { delivery_headers: item.delivery_headers } : {}),
  ...(item.delivery_query_params ? { delivery_query_params: item.delivery_query_params } : {}),
  attempt: 0,
  max_attempts: item.max_attempts ?? config.retry.max_attempts,
  deferrals: 0,
  created_at: at,
  scheduled_at: at,
});

/** ISO stamps of `now`: the items of one request share their `now`, so one stamp for all of them. */
const stamper = () => {
  let stampMs = NaN;
  let stamp = '';
  return (now: number): string => {
    if (now !== stampMs) {
      stampMs = now;
      stamp = iso(now);
    }
    return stamp;
  };
};

/**
 * An enqueue item → the Webhook record on the pending topic. Shared by howk-api and the edge
 * (edge/enqueue.ts), so both write the same record; `hash` lets a caller memoise endpoint hashes.
 */
export const webhookBuilder = (config: Config, secretBox: SecretBox | undefined, hash: (endpoint: string) => Promise<string> = endpointHash) => {
  const stampOf = stamper();
  return async (configId: string, item: EnqueueItem, now: number): Promise<Webhook> => {
    // Read before any await: a concurrent call may move the stamp on meanwhile.
    const at = stampOf(now);
    let sealed: string | undefined;
    if (item.signing_secret !== undefined) {
      if (!secretBox) throw new ValidationError('signing_secret needs HOWK_SECRETS_KEY to be set on the server (secrets never travel in plaintext)', 'signing_secret');
      sealed = await secretBox.seal(item.signing_secret);
    }
    const id = webhookId(now);
    return webhookOf(config, configId, item, id, at, await hash(item.endpoint), sealed);
  };
};

/** One trace per new webhook: its enqueue span, whose traceparent the record carries (header and `trace`). */
const startSpans = (tracing: Tracing, hooks: Webhook[]): TraceSpan[] =>
  hooks.map((w) => {
    const span = tracing.start('howk.enqueue', 'producer', undefined, { 'howk.webhook_id': w.id, 'howk.config_id': w.config_id, 'howk.endpoint_hash': w.endpoint_hash });
    w.trace = span.traceparent;
    return span;
  });

/**
 * Validated items → webhooks durably on the pending topic. A result comes back only once
 * Kafka acknowledged (acks=all); a failed produce rejects with UnavailableError and gives
 * back the idempotency keys it claimed, so a retry of the request starts clean.
 */
export const createEnqueuer = (d: EnqueueDeps) => {
  const { config } = d;
  // Senders enqueue to a handful of endpoints over and over; crypto.subtle.digest is a
  // thread-pool job per call, so each endpoint is hashed once (bounded; oldest out first).
  // `known` holds the hashes already computed: a request whose endpoints are all known (and
  // that seals no secret) builds its webhooks without awaiting a promise per item.
  const hashes = new Map<string, Promise<string>>();
  const known = new Map<string, string>();
  const hashOf = (endpoint: string): Promise<string> => {
    let h = hashes.get(endpoint);
    if (!h) {
      if (hashes.size >= 10_000) {
        const oldest = hashes.keys().next().value as string;
        hashes.delete(oldest);
        known.delete(oldest);
      }
      const p = endpointHash(endpoint);
      hashes.set(endpoint, (h = p));
      p.then(
        (v) => void (hashes.get(endpoint) === p && known.set(endpoint, v)),
        () => hashes.delete(endpoint),
      );
    }
    return h;
  };

  const build = webhookBuilder(config, d.secretBox, hashOf);
  const lingering = (d.statusLingerMs ?? 0) > 0;
  const pending = pendingWriter(d.hot, d.statusLingerMs ?? 0);
  const stampOf = stamper();
  const buildAll = (configId: string, items: EnqueueItem[], now: number): Webhook[] | Promise<Webhook[]> => {
    for (const it of items) if (it.signing_secret !== undefined || !known.has(it.endpoint)) return Promise.all(items.map((it) => build(configId, it, now)));
    const at = stampOf(now);
    return items.map((it) => webhookOf(config, configId, it, webhookId(now), at, known.get(it.endpoint)!, undefined));
  };

  const recordsOf = (fresh: Webhook[]): LogRecord[] => {
    const topic = config.kafka.topics.pending;
    return fresh.map((w) => {
      const r: LogRecord = { topic, key: webhookKey(w), value: encodeWebhook(w) };
      if (w.trace) r.headers = { [TRACEPARENT]: w.trace };
      return r;
    });
  };

  /** The request's keyed webhooks with their fingerprints (only keyed items are hashed). */
  const keyedOf = async (items: EnqueueItem[], hooks: Webhook[]): Promise<KeyedHook[]> => {
    const out: Promise<KeyedHook>[] = [];
    hooks.forEach((w, i) => {
      if (w.idempotency_key) out.push(requestFingerprint(items[i]!).then((fingerprint) => ({ id: w.id, key: w.idempotency_key!, fingerprint })));
    });
    return Promise.all(out);
  };

  const enqueue: Enqueuer = async (configId, items, opts = {}) => {
    const now = d.clock.now();
    const hooks = await buildAll(configId, items, now);
    const keyed = await keyedOf(items, hooks);
    const claims = { store: d.hot, configId, ttlMs: config.ttl.idempotency_ttl, log: d.log, clock: d.clock };
    // Same key twice in one request: the first wins; a different request under a held key is refused whole.
    const owners = (await claimKeyed(claims, keyed)) ?? new Map<string, string>();
    const results: EnqueueResult[] = [];
    const fresh: Webhook[] = [];
    for (const w of hooks) {
      const owner = owners.get(w.id) ?? w.id;
      if (owner === w.id) fresh.push(w);
      results.push({ webhook_id: owner, status: owner === w.id ? 'pending' : 'duplicate', endpoint: w.endpoint });
    }
    if (fresh.length) {
      const ns = nowNs(now);
      const spans = d.tracing ? startSpans(d.tracing, fresh) : undefined;
      if (opts.awaitedBy) for (const w of fresh) w.awaited_by = opts.awaitedBy;
      opts.beforeProduce?.(fresh.map((w) => w.id));
      const ids = new Set(fresh.map((w) => w.id));
      const mine = keyed.filter((k) => ids.has(k.id));
      try {
        await d.producer.send(recordsOf(fresh));
        if (spans) for (const s of spans) s.end();
      } catch (e) {
        if (spans) for (const s of spans) s.end({}, errorMessage(e));
        await releaseKeyed(claims, mine);
        throw e;
      }
      d.stages?.stage('produced', d.clock.now() - now, fresh.length);
      await commitKeyed(claims, mine);
      d.events?.enqueued('accepted', fresh.length);
      // Fail silent: the webhook is durable; a missing 'pending' status only delays visibility.
      // A worker's later status wins over it whenever it lands (statuses are last-write-wins by stamp).
      const written = pending
        .write({
          statuses: fresh.map((w) => ({ status: pendingStatus(w, ns) })),
          at: now,
          // Each endpoint once: a batch mostly posts to one, and the unique-endpoint count is a set.
          endpoints: [...new Set(fresh.map((w) => w.endpoint_hash))],
        })
        .catch((e) => d.log.warn('status write after enqueue failed', { error: errorMessage(e) }));
      // A Redis slower than the enqueues: past MAX_UNANSWERED_WAITING the answers wait again,
      // so the statuses held in memory stay bounded.
      if (!lingering || pending.waiting > MAX_UNANSWERED_WAITING) await written;
    }
    if (results.length > fresh.length) d.events?.enqueued('duplicate', results.length - fresh.length);
    return results;
  };
  /** Writes the statuses that wait, and resolves once those asked for so far are written (or failed). */
  return Object.assign(enqueue, { settle: pending.settle });
};

/** Validated items → their results once durable (createEnqueuer; the edge's: edge/enqueue.ts). */
export type Enqueuer = (configId: string, items: EnqueueItem[], opts?: EnqueueOptions) => Promise<EnqueueResult[]>;
