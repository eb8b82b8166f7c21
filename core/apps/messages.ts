import type { Config } from '../config/schema';
import type { EnqueueItem } from '../domain/enqueue';
import { ulid } from '../domain/ids';
import { ConflictError, NotFoundError, TooLargeError } from '../errors/errors';
import type { EnqueueResult } from '../domain/enqueue';
import type { PipelineEvents } from '../metrics/events';
import type { LogProducer } from '../ports/log';
import { toHex } from '../signing/encoding';
import { matchingEndpoints } from './filter';
import { messageWebhookKey } from './endpoint-rules';
import { encodeMessage, messageKey, type MessageRecord } from '../records/message';
import type { EndpointRecord } from '../records/application';
import type { MessageIn } from './schemas';
import type { AppStore } from './store';

// A message of the Svix API → one Howk webhook per endpoint that listens to it, all produced
// in one send by the enqueuer (none if it fails), each signed with that endpoint's secrets.
// An eventId makes the message id (and so each webhook's idempotency key): the same eventId
// again is the same message, and no endpoint gets a second webhook.

export type MessageDeps = {
  config: Config;
  store: AppStore;
  enqueue: (configId: string, items: EnqueueItem[]) => Promise<EnqueueResult[]>;
  producer: LogProducer;
  clock: { now(): number };
  /** Counts a new message that reached no endpoint (howk_svix_messages_unrouted_total). */
  events?: Pick<PipelineEvents, 'messageUnrouted'>;
};

const utf8 = new TextEncoder();

/** `msg_` + 26 hex of SHA-256(app id, eventId): the same eventId of an application is the same message. */
export const messageIdOf = async (appId: string, eventId: string): Promise<string> =>
  `msg_${toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', utf8.encode(`${appId}\n${eventId}`)))).slice(0, 26)}`;

/**
 * Secrets of one endpoint as the webhook carries them (sealed): space-separated, newest first.
 * A whsec_ secret holds no space, so the worker splits them back (core/signing/secret-format.ts).
 */
export const secretsText = (secrets: string[]): string => secrets.join(' ');

export const createMessages = (d: MessageDeps) => {
  const topic = d.config.kafka.topics.messages;
  const keep = async (message: MessageRecord) => {
    const key = messageKey(message.app_id, message.id);
    const value = encodeMessage(message);
    await d.producer.send([{ topic, key, value }]);
    d.store.table.apply(key, value);
  };
  const webhookOf = async (e: EndpointRecord, payload: string, key: string): Promise<EnqueueItem> => ({
    endpoint: e.url,
    payload,
    headers: e.headers,
    idempotency_key: key,
    signing_secret: secretsText(await d.store.signingSecrets(e)),
    ...(e.max_attempts ? { max_attempts: e.max_attempts } : {}),
  });
  // Resends of this instance one after another: each adds its webhook to the message record it read.
  let resending: Promise<unknown> = Promise.resolve();
  return {
    /** `payload`: the raw JSON text of the message's payload, delivered byte for byte. */
    async create(appIdOrUid: string, input: MessageIn, payload: string): Promise<{ message: MessageRecord; created: boolean }> {
      const app = d.store.app(appIdOrUid);
      const now = d.clock.now();
      const id = input.eventId ? await messageIdOf(app.id, input.eventId) : `msg_${ulid(now)}`;
      const known = d.store.table.message(app.id, id);
      if (known) return { message: known, created: false };
      const channels = input.channels ?? null;
      const targets = matchingEndpoints(d.store.table.endpointsOf(app.id), input.eventType, channels);
      // Each webhook carries the payload: the produce holds it once per endpoint.
      const bytes = utf8.encode(payload).length * targets.length;
      if (bytes > d.config.svix.max_fanout_bytes)
        throw new TooLargeError(`a message to ${targets.length} endpoints (${bytes} bytes in all; svix.max_fanout_bytes)`, d.config.svix.max_fanout_bytes);
      const items = await Promise.all(targets.map((e) => webhookOf(e, payload, messageWebhookKey(id, e.id))));
      const results = items.length ? await d.enqueue(app.id, items) : [];
      const message: MessageRecord = {
        kind: 'message',
        id,
        app_id: app.id,
        event_type: input.eventType,
        event_id: input.eventId ?? null,
        channels,
        payload,
        timestamp: new Date(now).toISOString(),
        deliveries: targets.map((e, i) => ({ endpoint_id: e.id, webhook_id: results[i]!.webhook_id })),
      };
      await keep(message);
      if (!targets.length) d.events?.messageUnrouted();
      return { message, created: true };
    },
    /**
     * Svix's resend: one more webhook of a kept message to one endpoint it was sent to, with the
     * endpoint's current URL, headers, secrets and policy; listed among the message's deliveries
     * (a manual attempt). `requestKey` (the request's idempotency-key) makes a repeated request
     * the same webhook, for as long as its idempotency key is kept.
     */
    resend(appIdOrUid: string, msgId: string, endpointIdOrUid: string, requestKey?: string): Promise<string> {
      const run = resending.then(async () => {
        const app = d.store.app(appIdOrUid);
        const m = d.store.table.message(app.id, msgId);
        if (!m) throw new NotFoundError(`message ${msgId} (an application keeps its latest svix.messages_kept_per_app)`);
        const e = d.store.endpoint(app.id, endpointIdOrUid);
        if (!m.deliveries.some((x) => x.endpoint_id === e.id)) throw new NotFoundError(`message ${m.id} to endpoint ${e.id} (it was never sent there)`);
        if (e.disabled) throw new ConflictError('endpoint_disabled', `endpoint ${e.id} is disabled: enable it to resend`);
        const nonce = requestKey ? toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', utf8.encode(requestKey)))).slice(0, 26) : ulid(d.clock.now());
        // svix:<msg>:<resend>:<endpoint>: the worker finds the endpoint by the key's last part (core/apps/endpoint-rules.ts).
        const [r] = await d.enqueue(app.id, [await webhookOf(e, m.payload, messageWebhookKey(`${m.id}:r${nonce}`, e.id))]);
        const webhookId = r!.webhook_id;
        const latest = d.store.table.message(app.id, m.id) ?? m;
        if (!latest.deliveries.some((x) => x.webhook_id === webhookId))
          await keep({ ...latest, deliveries: [...latest.deliveries, { endpoint_id: e.id, webhook_id: webhookId, manual: true }] });
        return webhookId;
      });
      resending = run.catch(() => undefined);
      return run;
    },
  };
};

export type Messages = ReturnType<typeof createMessages>;
