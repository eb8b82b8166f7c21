import { z } from 'zod';
import { SecretEntrySchema } from '../security/config-secrets';

// The Svix API's model (docs/SVIX-API.md) as records of the compacted howk.applications
// topic, one key per object: `app/<app id>`, `ep/<app id>/<endpoint id>`, `et/<name>`. A
// tombstone deletes. An application IS a Howk config: its id is the config id its webhooks
// are enqueued under, so keys, bindings, listings and policies of that config apply to it.

export const AppRecordSchema = z.object({
  kind: z.literal('app'),
  id: z.string(),
  uid: z.string().nullable(),
  name: z.string(),
  metadata: z.record(z.string(), z.string()),
  throttle_rate: z.number().int().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type AppRecord = z.infer<typeof AppRecordSchema>;

export const EndpointRecordSchema = z.object({
  kind: z.literal('endpoint'),
  id: z.string(),
  app_id: z.string(),
  uid: z.string().nullable(),
  url: z.string(),
  description: z.string(),
  disabled: z.boolean(),
  /** null: every event type. */
  filter_types: z.array(z.string()).nullable(),
  /** null: every message, whatever its channels. */
  channels: z.array(z.string()).nullable(),
  throttle_rate: z.number().int().nullable(),
  /** Attempts of each webhook a message makes for it (Howk's own field); null or absent: retry.max_attempts. */
  max_attempts: z.number().int().nullable().optional(),
  /** Howk's own delivery policy, read at each attempt (core/apps/gate.ts); null or absent: the global one. */
  timeout_ms: z.number().int().nullable().optional(),
  max_backoff_ms: z.number().int().nullable().optional(),
  max_concurrency: z.number().int().nullable().optional(),
  headers: z.record(z.string(), z.string()),
  metadata: z.record(z.string(), z.string()),
  version: z.number().int(),
  /** Sealed with the secret box, newest first; a rotated-out one keeps signing until its expires_at. */
  secrets: z.array(SecretEntrySchema),
  created_at: z.string(),
  updated_at: z.string(),
});
export type EndpointRecord = z.infer<typeof EndpointRecordSchema>;

export const EventTypeRecordSchema = z.object({
  kind: z.literal('event_type'),
  name: z.string(),
  description: z.string(),
  archived: z.boolean(),
  deprecated: z.boolean(),
  group_name: z.string().nullable(),
  schemas: z.unknown().optional(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type EventTypeRecord = z.infer<typeof EventTypeRecordSchema>;

/** One per message on howk.messages (key `msg/<app id>/<message id>`): what GET .../msg answers, and the webhook of each endpoint it reached. */
export const MessageRecordSchema = z.object({
  kind: z.literal('message'),
  id: z.string(),
  app_id: z.string(),
  event_type: z.string(),
  event_id: z.string().nullable(),
  channels: z.array(z.string()).nullable(),
  /** Raw JSON text, as sent. */
  payload: z.string(),
  timestamp: z.string(),
  /** `manual`: made by a resend (Svix's triggerType 1), not by the message itself. */
  deliveries: z.array(z.object({ endpoint_id: z.string(), webhook_id: z.string(), manual: z.boolean().optional() })),
});
export type MessageRecord = z.infer<typeof MessageRecordSchema>;

export type ModelRecord = AppRecord | EndpointRecord | EventTypeRecord;
const ModelSchema = z.discriminatedUnion('kind', [AppRecordSchema, EndpointRecordSchema, EventTypeRecordSchema]);

export const appKey = (id: string): string => `app/${id}`;
export const endpointKey = (appId: string, id: string): string => `ep/${appId}/${id}`;
export const eventTypeKey = (name: string): string => `et/${name}`;
export const messageKey = (appId: string, id: string): string => `msg/${appId}/${id}`;

/** The key a record is stored under: a record under any other key is ignored (it cannot overwrite another object). */
export const keyOf = (r: ModelRecord | MessageRecord): string => {
  switch (r.kind) {
    case 'app':
      return appKey(r.id);
    case 'endpoint':
      return endpointKey(r.app_id, r.id);
    case 'event_type':
      return eventTypeKey(r.name);
    case 'message':
      return messageKey(r.app_id, r.id);
  }
};

export const encodeRecord = (r: ModelRecord | MessageRecord): string => JSON.stringify(r);

const parseWith = <T extends { kind: string }>(schema: z.ZodType<T>, key: string, value: string): T | undefined => {
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch {
    return undefined;
  }
  const p = schema.safeParse(v);
  if (!p.success) return undefined;
  return keyOf(p.data as unknown as ModelRecord) === key ? p.data : undefined;
};

/** A model record read back, or undefined when it is not one or sits under a key that is not its own. */
export const decodeModel = (key: string, value: string): ModelRecord | undefined => parseWith(ModelSchema as z.ZodType<ModelRecord>, key, value);

export const decodeMessage = (key: string, value: string): MessageRecord | undefined => parseWith(MessageRecordSchema, key, value);
