import { z } from 'zod';
import { ValidationError, type Issue } from '../errors/errors';
import { memoize } from './memo';
import { elementMembers, memberSpan, slice, type Span } from './raw-json';
import { CLIENT_MANAGED_HEADERS, HEADER_NAME, headerProblem } from './headers';
import { signingSecretProblem } from './secret-format';
import { ENQUEUE_RESERVED_HEADERS } from './reserved-headers';

// The enqueue contract: the request schemas and the item they yield, shared by howk-api, the
// edge and transformers (/incoming). Validation runs on the parsed body; the payload's bytes
// are cut from the raw text (see raw-json.ts).

/** The limits an enqueue is checked against: the api.* keys of the same names (config/schema.ts). */
export type EnqueueLimits = {
  readonly max_batch_size: number;
  readonly max_endpoint_length: number;
  readonly max_headers: number;
  readonly max_header_value_length: number;
  readonly max_idempotency_key_length: number;
};

/** What an enqueue answers for one webhook: its id, and whether it is new or a duplicate of one already accepted. */
export type EnqueueResult = { webhook_id: string; status: 'pending' | 'duplicate'; endpoint: string };

/** An absolute http(s) URL. */
export const isHttpUrl = (u: string): boolean => {
  try {
    const p = new URL(u).protocol;
    return p === 'http:' || p === 'https:';
  } catch {
    return false;
  }
};

// Senders post to a handful of endpoints over and over, and parsing a URL is most of what
// checking an item costs: each endpoint's verdict is remembered (bounded).
const knownHttpUrl = memoize(10_000, isHttpUrl);
const endpointOk = (u: string, l: EnqueueLimits): boolean => u.length <= l.max_endpoint_length && knownHttpUrl(u);

const MAX_CONTENT_TYPE = 256;
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
/** type/subtype and parameters (RFC 9110 8.3.1), nothing a header value cannot carry. */
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|"[\\t\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]*"))*$`);
/** Whether a Content-Type value is a media type a raw body can be delivered with. */
export const isMediaType = (v: string): boolean => v.length <= MAX_CONTENT_TYPE && MEDIA_TYPE.test(v);
/** Standard base64 (RFC 4648 section 4) with its padding: what a client's encoder writes. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export const enqueueItemSchema = (l: EnqueueLimits) =>
  z.object({
    endpoint: z
      .string({ error: 'endpoint is required and must be a string' })
      .max(l.max_endpoint_length, `endpoint is longer than ${l.max_endpoint_length} characters`)
      .refine(isHttpUrl, 'endpoint must be an absolute http(s) URL'),
    // Required unless body_base64 is given (checked with the item: see rawBodyOf).
    payload: z.unknown().optional(),
    body_base64: z.string().optional().describe('a non-JSON body: its bytes in standard base64, delivered and signed exactly; with content_type, instead of payload'),
    content_type: z
      .string()
      .max(MAX_CONTENT_TYPE, `content_type is longer than ${MAX_CONTENT_TYPE} characters`)
      .regex(MEDIA_TYPE, 'content_type must be a media type such as text/csv or application/xml; charset=utf-8')
      .optional()
      .describe('the Content-Type the body_base64 bytes are delivered with'),
    headers: z
      .record(z.string().regex(HEADER_NAME, 'header names must be HTTP tokens (RFC 9110)'), z.string({ error: 'header values must be strings' }))
      .superRefine((h, ctx) => {
        const names = Object.keys(h);
        if (names.length > l.max_headers) ctx.addIssue({ code: 'custom', message: `at most ${l.max_headers} headers` });
        for (const name of names) {
          const value = h[name]!;
          const lower = name.toLowerCase();
          // The HTTP client's own names get headerProblem's message, which says so.
          const message =
            ENQUEUE_RESERVED_HEADERS.has(lower) && !CLIENT_MANAGED_HEADERS.has(lower)
              ? `${name} is set by Howk and cannot be given`
              : (headerProblem(name, value) ?? (value.length > l.max_header_value_length ? `header values are limited to ${l.max_header_value_length} characters` : undefined));
          if (message) ctx.addIssue({ code: 'custom', path: [name], message });
        }
      })
      .optional(),
    idempotency_key: z.string().min(1).max(l.max_idempotency_key_length, `idempotency_key is longer than ${l.max_idempotency_key_length} characters`).optional(),
    signing_secret: z
      .string()
      .min(8, 'signing_secret must have at least 8 characters')
      .max(512)
      .superRefine((v, ctx) => {
        const message = signingSecretProblem(v);
        if (message) ctx.addIssue({ code: 'custom', message });
      })
      .optional(),
    max_attempts: z.number().int().min(1).max(1000).optional(),
  });

// Building the zod schema costs far more than using it: one per limits object, not per item.
const schemas = new WeakMap<EnqueueLimits, ReturnType<typeof enqueueItemSchema>>();
const itemSchemaFor = (l: EnqueueLimits) => {
  let s = schemas.get(l);
  if (!s) schemas.set(l, (s = enqueueItemSchema(l)));
  return s;
};

export type RawBody = { content_type: string; body_base64: string };

/** One webhook to enqueue: from a request body, or posted by a transformer (howk.post). */
export type EnqueueItem = {
  endpoint: string;
  /** Raw JSON text: the bytes enqueued, signed and sent (as the producer sent them, or as the transformer fixed them). */
  payload: string;
  headers: Record<string, string>;
  idempotency_key?: string;
  signing_secret?: string;
  max_attempts?: number;
  /** A non-JSON body: its bytes (base64) and Content-Type, delivered and signed as they are; `payload` is then `null`. */
  raw?: RawBody;
  /** Set by transformers only (never read from a request body): `${VAR}` templates resolved at send time. */
  delivery_headers?: Record<string, string>;
  delivery_query_params?: Record<string, string>;
};

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ValidationError(`body is not valid JSON: ${(e as Error).message}`, 'body');
  }
};

const isEmptyObject = (v: unknown): boolean => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  for (const _ in v) return false;
  return true;
};

/** An item's fields once checked, the payload aside (its text is cut from the body). */
type Checked = Omit<EnqueueItem, 'payload' | 'headers' | 'raw'> & { headers?: Record<string, string>; body_base64?: string; content_type?: string };

/**
 * The item's body, JSON or raw: `payload`, or `body_base64` with `content_type`, never both.
 * Undefined for a JSON payload; the issue that makes the pair invalid otherwise.
 */
const rawBodyOf = (v: Record<string, unknown>, d: Checked): RawBody | undefined | Issue => {
  const raw = d.body_base64 !== undefined;
  if (raw && v.payload !== undefined) return { path: 'body_base64', message: 'give payload (JSON) or body_base64 (any other body), not both' };
  if (!raw && d.content_type !== undefined) return { path: 'content_type', message: 'content_type goes with body_base64; a payload is always application/json' };
  if (!raw) return v.payload === undefined ? { path: 'payload', message: 'payload is required (or body_base64 with content_type for a non-JSON body)' } : undefined;
  if (!BASE64.test(d.body_base64!)) return { path: 'body_base64', message: 'body_base64 must be standard base64 (A-Z a-z 0-9 + /, padded with =)' };
  if (d.content_type === undefined) return { path: 'content_type', message: 'content_type is required with body_base64 (e.g. text/csv)' };
  return { content_type: d.content_type, body_base64: d.body_base64! };
};

const isIssue = (x: unknown): x is Issue => typeof x === 'object' && x !== null && 'message' in x;

const FAST_KEYS = new Set(['endpoint', 'payload', 'headers', 'idempotency_key', 'max_attempts']);

/**
 * The common item (endpoint, payload, maybe an idempotency key, attempts, no headers) checked
 * by hand: the item zod would accept, or undefined for anything else (headers, a signing
 * secret, an unknown or invalid field), which zod then checks and reports as always.
 */
const fastItem = (v: Record<string, unknown>, l: EnqueueLimits): Checked | undefined => {
  for (const k in v) if (!FAST_KEYS.has(k)) return undefined;
  const { endpoint, payload, headers, idempotency_key: key, max_attempts: max } = v;
  if (typeof endpoint !== 'string' || payload === undefined || !endpointOk(endpoint, l)) return undefined;
  if (headers !== undefined && !isEmptyObject(headers)) return undefined;
  if (key !== undefined && (typeof key !== 'string' || key.length < 1 || key.length > l.max_idempotency_key_length)) return undefined;
  if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max) || max < 1 || max > 1000)) return undefined;
  return { endpoint, headers: {}, idempotency_key: key, signing_secret: undefined, max_attempts: max };
};

/** `payload` is the span of the item's payload in `text` (it has one once the item is valid). */
const toItem = (text: string, payload: Span | undefined, value: Record<string, unknown>, l: EnqueueLimits, prefix: string): EnqueueItem => {
  let d: Checked | undefined = fastItem(value, l);
  if (!d) {
    const res = itemSchemaFor(l).safeParse(value);
    if (!res.success) throw ValidationError.fromZod(res.error, { at: prefix });
    d = res.data;
  }
  const raw = rawBodyOf(value, d);
  if (isIssue(raw)) throw ValidationError.fromIssues([{ path: prefix ? `${prefix}.${raw.path}` : raw.path, message: raw.message }]);
  return {
    endpoint: d.endpoint,
    payload: raw ? 'null' : slice(text, payload!),
    ...(raw ? { raw } : {}),
    headers: d.headers ?? {},
    idempotency_key: d.idempotency_key,
    signing_secret: d.signing_secret,
    max_attempts: d.max_attempts,
  };
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export const parseEnqueueBody = (text: string, l: EnqueueLimits): EnqueueItem => {
  const v = parseJson(text);
  if (!isObject(v)) throw new ValidationError('body must be a JSON object', 'body');
  return toItem(text, memberSpan(text, 0, 'payload'), v, l, '');
};

/** `{"webhooks": [item, ...]}` with 1..max_batch_size items; any invalid item rejects the whole batch. */
export const parseBatchBody = (text: string, l: EnqueueLimits): EnqueueItem[] => {
  const v = parseJson(text);
  if (!isObject(v) || !Array.isArray(v.webhooks)) throw new ValidationError('body must be {"webhooks": [...]}', 'webhooks');
  const items = v.webhooks;
  if (items.length === 0) throw new ValidationError('webhooks must hold at least 1 item', 'webhooks');
  if (items.length > l.max_batch_size) throw new ValidationError(`webhooks holds ${items.length} items; the limit is ${l.max_batch_size}`, 'webhooks');
  const payloads = elementMembers(text, memberSpan(text, 0, 'webhooks')!.start, 'payload');
  const out: EnqueueItem[] = [];
  const issues: Issue[] = [];
  items.forEach((item, i) => {
    if (!isObject(item)) {
      issues.push({ path: `webhooks.${i}`, message: 'must be an object' });
      return;
    }
    try {
      out.push(toItem(text, payloads[i], item, l, `webhooks.${i}`));
    } catch (e) {
      if (e instanceof ValidationError) issues.push(...e.issues);
      else throw e;
    }
  });
  if (issues.length) throw ValidationError.fromIssues(issues);
  return out;
};
