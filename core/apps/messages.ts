import type { Config } from '../config/schema';
import type { EnqueueItem } from '../domain/enqueue';
import { ulid } from '../domain/ids';
import { TooLargeError } from '../errors/errors';
import type { EnqueueResult } from '../pipeline/enqueue';
import type { LogProducer } from '../ports/log';
import { toHex } from '../signing/encoding';
import { matchingEndpoints } from './filter';
import { messageWebhookKey } from './gate';
import { encodeMessage, messageKey, type MessageRecord } from '../records/message';
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
      const items: EnqueueItem[] = await Promise.all(
        targets.map(async (e) => ({
          endpoint: e.url,
          payload,
          headers: e.headers,
          idempotency_key: messageWebhookKey(id, e.id),
          signing_secret: secretsText(await d.store.signingSecrets(e)),
          ...(e.max_attempts ? { max_attempts: e.max_attempts } : {}),
        })),
      );
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
      const key = messageKey(app.id, id);
      const value = encodeMessage(message);
      await d.producer.send([{ topic, key, value }]);
      d.store.table.apply(key, value);
      return { message, created: true };
    },
  };
};

export type Messages = ReturnType<typeof createMessages>;
