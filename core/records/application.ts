import { z } from 'zod';
import { SecretEntrySchema } from './config-secret';

// The record of howk.applications (compacted, one partition): the Svix API's model
// (docs/SVIX-API.md), one key per object: `app/<app id>`, `ep/<app id>/<endpoint id>`,
// `et/<name>` (`applicationKey`). Tombstone: the object is deleted (an application's
// tombstone also ends its endpoints and kept messages, core/apps/table.ts). A record under a
// key that is not its own is malformed: it cannot overwrite another object. An application
// IS a Howk config: its id is the config id its webhooks are enqueued under, so keys,
// bindings, listings and policies of that config apply to it.

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
  /** Howk's own delivery policy, read at each attempt (core/apps/endpoint-rules.ts); null or absent: the global one. */
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

export type ModelRecord = AppRecord | EndpointRecord | EventTypeRecord;
const ModelSchema = z.discriminatedUnion('kind', [AppRecordSchema, EndpointRecordSchema, EventTypeRecordSchema]);

export const appKey = (id: string): string => `app/${id}`;
export const endpointKey = (appId: string, id: string): string => `ep/${appId}/${id}`;
export const eventTypeKey = (name: string): string => `et/${name}`;

/** The key a record is stored under. */
export const applicationKey = (r: ModelRecord): string => (r.kind === 'app' ? appKey(r.id) : r.kind === 'endpoint' ? endpointKey(r.app_id, r.id) : eventTypeKey(r.name));

export const encodeApplication = (r: ModelRecord): string => JSON.stringify(r);

/** A model record read back, or undefined when it is not one or sits under a key that is not its own. */
export const decodeApplication = (key: string, value: string): ModelRecord | undefined => {
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch {
    return undefined;
  }
  const p = (ModelSchema as z.ZodType<ModelRecord>).safeParse(v);
  return p.success && applicationKey(p.data) === key ? p.data : undefined;
};
