import type { Context } from 'hono';
import { z } from 'zod';
import type { AppStore } from '../../apps/store';
import type { AppRecord, EndpointRecord, EventTypeRecord } from '../../records/application';
import type { MessageRecord } from '../../records/message';
import { UID } from '../../apps/schemas';
import { ValidationError } from '../../errors/errors';
import type { ApiDeps } from '../deps';
import type { ConfigFrom } from '../route';
import { readLimited } from './body-limit';

// What the routes of the Svix API share: the camelCase answers the official client reads,
// its list pagination, and the body reader.

export const appOut = (a: AppRecord) => ({
  id: a.id,
  uid: a.uid,
  name: a.name,
  metadata: a.metadata,
  throttleRate: a.throttle_rate,
  rateLimit: a.throttle_rate,
  createdAt: a.created_at,
  updatedAt: a.updated_at,
});

export const endpointOut = (e: EndpointRecord) => ({
  id: e.id,
  uid: e.uid,
  url: e.url,
  description: e.description,
  disabled: e.disabled,
  filterTypes: e.filter_types,
  channels: e.channels,
  throttleRate: e.throttle_rate,
  rateLimit: e.throttle_rate,
  maxAttempts: e.max_attempts ?? null,
  timeoutMs: e.timeout_ms ?? null,
  maxBackoffMs: e.max_backoff_ms ?? null,
  maxConcurrency: e.max_concurrency ?? null,
  metadata: e.metadata,
  version: e.version,
  createdAt: e.created_at,
  updatedAt: e.updated_at,
});

export const eventTypeOut = (t: EventTypeRecord) => ({
  name: t.name,
  description: t.description,
  archived: t.archived,
  deprecated: t.deprecated,
  groupName: t.group_name,
  schemas: t.schemas ?? null,
  createdAt: t.created_at,
  updatedAt: t.updated_at,
});

export const messageOut = (m: MessageRecord, withContent = true) => ({
  id: m.id,
  eventType: m.event_type,
  eventId: m.event_id,
  channels: m.channels,
  payload: withContent ? (JSON.parse(m.payload) as unknown) : {},
  timestamp: m.timestamp,
});

const stamp = z.string().describe('RFC 3339');
export const AppOutSchema = z.object({
  id: z.string(),
  uid: z.string().nullable(),
  name: z.string(),
  metadata: z.record(z.string(), z.string()),
  throttleRate: z.number().nullable(),
  rateLimit: z.number().nullable(),
  createdAt: stamp,
  updatedAt: stamp,
});
export const EndpointOutSchema = z.object({
  id: z.string(),
  uid: z.string().nullable(),
  url: z.string(),
  description: z.string(),
  disabled: z.boolean(),
  filterTypes: z.array(z.string()).nullable(),
  channels: z.array(z.string()).nullable(),
  throttleRate: z.number().nullable(),
  rateLimit: z.number().nullable(),
  maxAttempts: z.number().nullable().describe("Howk's own: attempts of each webhook a message makes for it (null: retry.max_attempts)"),
  timeoutMs: z.number().nullable().describe("Howk's own: time allowed for one attempt, ms, read at each attempt (null: delivery.timeout)"),
  maxBackoffMs: z.number().nullable().describe("Howk's own: longest backoff between attempts, ms, read at each attempt (null: retry.max_delay)"),
  maxConcurrency: z.number().nullable().describe("Howk's own: ceiling of the endpoint's adaptive in-flight limit, read at each admission (null: concurrency.max_limit)"),
  metadata: z.record(z.string(), z.string()),
  version: z.number(),
  createdAt: stamp,
  updatedAt: stamp,
});
export const EventTypeOutSchema = z.object({
  name: z.string(),
  description: z.string(),
  archived: z.boolean(),
  deprecated: z.boolean(),
  groupName: z.string().nullable(),
  schemas: z.unknown(),
  createdAt: stamp,
  updatedAt: stamp,
});
export const MessageOutSchema = z.object({
  id: z.string(),
  eventType: z.string(),
  eventId: z.string().nullable(),
  channels: z.array(z.string()).nullable(),
  payload: z.unknown(),
  timestamp: stamp,
});
/** A Svix listing's body (the official client's List*Out), not Howk's cursor ListBody: the console reads Svix routes with it. listOf is its schema. */
export type SvixList<T> = { data: T[]; iterator: string | null; prevIterator: string | null; done: boolean };
export const listOf = (item: z.ZodType) => z.object({ data: z.array(item), iterator: z.string().nullable(), prevIterator: z.string().nullable(), done: z.boolean() });
export const SvixError = z.looseObject({
  code: z.string(),
  detail: z.unknown().describe('a message; for 422, [{loc, msg, type}]'),
  error: z.looseObject({ code: z.string(), message: z.string() }).describe("Howk's own error, as on every route"),
});

const withContentParam = z.enum(['true', 'false']).optional();
export const ListQuery = () =>
  z.object({
    limit: z.coerce.number().int().min(1).max(250).optional().describe('1-250, 50 by default'),
    iterator: z.string().max(256).optional().describe('the iterator of the previous page'),
    order: z.enum(['ascending', 'descending']).optional(),
  });
/** A listing whose items have content Svix's `with_content=false` leaves out (payloads, response bodies, schemas). */
export const ContentListQuery = () =>
  ListQuery().extend({ with_content: withContentParam.describe('false: the content (payloads, response bodies, schemas) left out; true by default') });
export const WithContentQuery = () => z.object({ with_content: withContentParam.describe('false: the payload is left out ({}); true by default') });

/** Svix's `with_content` (true unless `false`); any other value is a 422 naming it. */
export const withContent = (c: Context): boolean => {
  const q = WithContentQuery().safeParse({ with_content: c.req.query('with_content') });
  if (!q.success) throw ValidationError.fromZod(q.error, { at: 'query' });
  return q.data.with_content !== 'false';
};

/** One page of `items` (given oldest first) after the item whose key is `iterator`. */
export const page = <T>(c: Context, items: T[], key: (t: T) => string, descendingByDefault = false): SvixList<T> => {
  const q = ListQuery().safeParse(c.req.query());
  if (!q.success) throw ValidationError.fromZod(q.error, { at: 'query' });
  const { limit = 50, iterator, order } = q.data;
  const descending = (order ?? (descendingByDefault ? 'descending' : 'ascending')) === 'descending';
  const ordered = descending ? [...items].reverse() : items;
  const start = iterator === undefined ? 0 : ordered.findIndex((t) => key(t) === iterator) + 1;
  const data = start === 0 && iterator !== undefined ? [] : ordered.slice(start, start + limit);
  const done = start + limit >= ordered.length || data.length === 0;
  return { data, iterator: data.length ? key(data[data.length - 1]!) : null, prevIterator: null, done };
};

/** A JSON body of at most `max` bytes, checked against a schema (a 422 naming each field). */
export const readSvixBody = async <T extends z.ZodType>(c: Context, schema: T, max: number, optional = false): Promise<{ value: z.infer<T>; text: string }> => {
  const text = new TextDecoder().decode(await readLimited(c, max));
  let raw: unknown = {};
  if (!optional || text.trim() !== '') {
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new ValidationError(`body is not valid JSON: ${(e as Error).message}`, 'body');
    }
  }
  const res = schema.safeParse(raw);
  if (!res.success) throw ValidationError.fromZod(res.error, { root: 'body' });
  return { value: res.data, text };
};

/** Svix's small bodies: 64 KB. */
export const SMALL_BODY = 65_536;

export const store = (d: ApiDeps): AppStore => d.apps!.store;

/** The application of `:app` (id or uid) is the config a bound key must reach; another application's answers 404. */
export const appConfig: ConfigFrom = { from: 'owner', name: 'app', owner: async (d, id) => d.apps?.store.resolveApp(id) ?? null, notFound: (id) => `application ${id}` };

/** An id or uid in a path, with the shape both have (Svix's) in the OpenAPI document; one of another shape is unknown (404). */
const idOrUid = (what: string) => z.string().min(1).max(256).regex(UID, 'must be 1-256 characters of a-z A-Z 0-9 - _ .').describe(`${what} id or uid`);
export const AppParam = z.object({ app: idOrUid('application') });
export const EndpointParams = AppParam.extend({ endpoint: idOrUid('endpoint') });
