import { z } from 'zod';
import type { Config } from '../config/schema';
import { enqueueItemSchema, isHttpUrl } from '../domain/enqueue';
import { signingSecretProblem, WHSEC_PREFIX } from '../domain/secret-format';

// Request bodies of the Svix API, with the field names the official `svix` client sends
// (camelCase). Unknown fields are refused; Svix fields Howk does not implement are accepted
// only when absent or null, so that a client never believes a setting took effect.

/** Svix's uid and event-type name shape. */
export const UID = /^[a-zA-Z0-9\-_.]+$/;
const uid = z.string().min(1).max(256).regex(UID, 'must be 1-256 characters of a-z A-Z 0-9 - _ .');
const notSupported = (what: string) => z.null({ error: `${what} is not supported by Howk (leave it out or null)` }).optional();
const metadata = z.record(z.string().max(256), z.string().max(1024)).refine((m) => Object.keys(m).length <= 50, 'at most 50 metadata entries');
/** Bounds of an endpoint's own timeoutMs and maxBackoffMs (docs/SVIX-API.md, *Delivery policy*). */
export const MIN_TIMEOUT_MS = 100;
export const MAX_TIMEOUT_MS = 300_000;
export const MIN_BACKOFF_MS = 1000;
export const MAX_BACKOFF_MS = 86_400_000;
const rate = z.number().int().min(1).max(1_000_000).nullable().optional();

/** `whsec_<base64>` or bare base64 (Svix takes both); stored with the prefix. */
export const endpointSecret = z
  .string()
  .max(512)
  .transform((s) => (s.startsWith(WHSEC_PREFIX) ? s : `${WHSEC_PREFIX}${s}`))
  .superRefine((s, ctx) => {
    const message = signingSecretProblem(s);
    if (message) ctx.addIssue({ code: 'custom', message });
  });

export const appIn = (c: Config) =>
  z.strictObject({
    name: z.string().min(1).max(c.svix.max_description_length),
    uid: uid.nullable().optional(),
    metadata: metadata.optional(),
    throttleRate: rate,
    rateLimit: rate,
  });
export type AppIn = z.infer<ReturnType<typeof appIn>>;

const endpointFields = (c: Config) => {
  const names = z.array(uid).max(c.svix.max_filter_types, `at most ${c.svix.max_filter_types} entries`);
  return {
    url: z
      .string({ error: 'url is required and must be a string' })
      .max(c.api.max_endpoint_length, `url is longer than ${c.api.max_endpoint_length} characters`)
      .refine(isHttpUrl, 'url must be an absolute http(s) URL'),
    uid: uid.nullable().optional(),
    description: z.string().max(c.svix.max_description_length, `description is longer than ${c.svix.max_description_length} characters`).optional(),
    disabled: z.boolean().optional(),
    filterTypes: names.min(1, 'filterTypes must name at least one event type (null or absent: every type)').nullable().optional(),
    channels: names.min(1, 'channels must name at least one channel (null or absent: every message)').nullable().optional(),
    throttleRate: rate,
    rateLimit: rate,
    metadata: metadata.optional(),
    version: z.number().int().min(1).nullable().optional(),
    /** Howk's own: attempts of each webhook a message makes for this endpoint (null: retry.max_attempts). */
    maxAttempts: z.number().int().min(1).max(1000).nullable().optional(),
    // Howk's own delivery policy, read at each attempt (core/apps/endpoint-rules.ts endpointPolicyOf); null: the global one.
    timeoutMs: z.number().int().min(MIN_TIMEOUT_MS).max(MAX_TIMEOUT_MS).nullable().optional(),
    maxBackoffMs: z.number().int().min(MIN_BACKOFF_MS).max(MAX_BACKOFF_MS).nullable().optional(),
    maxConcurrency: z
      .number()
      .int()
      .min(1)
      .max(c.concurrency.max_limit)
      .refine(() => c.concurrency.max_inflight_per_endpoint > 0, 'maxConcurrency needs endpoint limits on the server (concurrency.max_inflight_per_endpoint > 0)')
      .nullable()
      .optional(),
  };
};

/** The custom headers of an endpoint: checked as an enqueue's headers are (names, values, reserved names, count). */
export const endpointHeaders = (c: Config) => enqueueItemSchema(c.api).shape.headers.unwrap();

export const endpointIn = (c: Config) => z.strictObject({ ...endpointFields(c), secret: endpointSecret.nullable().optional(), headers: endpointHeaders(c).nullable().optional() });
export type EndpointIn = z.infer<ReturnType<typeof endpointIn>>;
export const endpointUpdate = (c: Config) => z.strictObject(endpointFields(c));
export type EndpointUpdate = z.infer<ReturnType<typeof endpointUpdate>>;

export const headersIn = (c: Config) => z.strictObject({ headers: endpointHeaders(c) });
export const rotateIn = z.strictObject({
  key: endpointSecret.nullable().optional(),
  gracePeriodSeconds: notSupported('gracePeriodSeconds (the overlap is signing.rotation_overlap)'),
});

const eventTypeFields = (c: Config) => ({
  description: z.string().max(c.svix.max_description_length, `description is longer than ${c.svix.max_description_length} characters`),
  archived: z.boolean().optional(),
  deprecated: z.boolean().optional(),
  groupName: z.string().max(256).nullable().optional(),
  schemas: z.unknown().optional(),
  featureFlag: notSupported('featureFlag'),
  featureFlags: notSupported('featureFlags'),
});
export const eventTypeIn = (c: Config) => z.strictObject({ name: uid, ...eventTypeFields(c) });
export type EventTypeIn = z.infer<ReturnType<typeof eventTypeIn>>;
export const eventTypeUpdate = (c: Config) => z.strictObject(eventTypeFields(c));
export type EventTypeUpdate = z.infer<ReturnType<typeof eventTypeUpdate>>;

export const messageIn = (c: Config) =>
  z.strictObject({
    eventType: uid,
    payload: z.unknown().refine((v) => v !== undefined, 'payload is required'),
    eventId: uid.nullable().optional(),
    channels: z.array(uid).min(1).max(c.svix.max_filter_types, `at most ${c.svix.max_filter_types} channels`).nullable().optional(),
    application: notSupported('application (create the application first)'),
    deliverAt: notSupported('deliverAt'),
    tags: notSupported('tags'),
    payloadRetentionHours: notSupported('payloadRetentionHours'),
    payloadRetentionPeriod: notSupported('payloadRetentionPeriod'),
    transformationsParams: notSupported('transformationsParams'),
  });
export type MessageIn = z.infer<ReturnType<typeof messageIn>>;
