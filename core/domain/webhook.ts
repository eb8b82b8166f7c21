import { z } from 'zod';
import { memberSpan, slice } from './raw-json';

/**
 * A webhook as it travels on howk.pending / howk.slow (snake_case, HOWK compatible).
 * `payload` holds the raw JSON text fixed at enqueue: it is spliced into the record
 * as JSON (not as a string) and cut out again byte for byte.
 */
export const WebhookSchema = z.object({
  id: z.string().min(1),
  config_id: z.string().min(1),
  endpoint: z.string().min(1),
  endpoint_hash: z.string(),
  payload: z.string(),
  headers: z.record(z.string(), z.string()).default({}),
  /** A non-JSON body (payload is then `null`): its bytes in base64, delivered and signed exactly, with content_type. */
  body_base64: z.string().optional(),
  content_type: z.string().optional(),
  idempotency_key: z.string().optional(),
  /** Encrypted envelope (core/signing/secret-box), never plaintext. */
  signing_secret: z.string().optional(),
  attempt: z.number().int().min(0),
  max_attempts: z.number().int().min(1),
  /** 429 + Retry-After deferrals so far: they spend no attempt but have their own budget. */
  deferrals: z.number().int().min(0).default(0),
  created_at: z.string(),
  scheduled_at: z.string(),
  script_hash: z.string().optional(),
  replay_of: z.string().optional(),
  /** Ids of the pause drains that moved it back to the pending topic (the latest few): it passes their pause. */
  released_by: z.array(z.string()).optional(),
  /** The api instance waiting for its first attempt's outcome (?wait=): the worker tells it (core/ports/outcome-bus.ts). Never sent. */
  awaited_by: z.string().optional(),
  /** `${VAR}` templates (not values) the worker resolves at send time from allow-listed env variables. */
  delivery_headers: z.record(z.string(), z.string()).optional(),
  delivery_query_params: z.record(z.string(), z.string()).optional(),
  /** W3C traceparent of its enqueue span (tracing.enabled): retries and the slow lane keep its trace. */
  trace: z.string().optional(),
});
export type Webhook = z.infer<typeof WebhookSchema>;

/** Serializes with the payload spliced in raw. */
export const encodeWebhook = (w: Webhook): string => {
  const { payload, ...rest } = w;
  const head = JSON.stringify(rest);
  return `${head.slice(0, -1)},"payload":${payload}}`;
};

type Kind = 'text' | 'nonEmpty' | 'count' | 'positive' | 'map' | 'list';

/** WebhookSchema's fields in its order (the order zod's output has), by what each must be. */
const FIELDS: [key: keyof Webhook, kind: Kind, required: boolean][] = [
  ['id', 'nonEmpty', true],
  ['config_id', 'nonEmpty', true],
  ['endpoint', 'nonEmpty', true],
  ['endpoint_hash', 'text', true],
  ['payload', 'text', true],
  ['headers', 'map', false],
  ['body_base64', 'text', false],
  ['content_type', 'text', false],
  ['idempotency_key', 'text', false],
  ['signing_secret', 'text', false],
  ['attempt', 'count', true],
  ['max_attempts', 'positive', true],
  ['deferrals', 'count', false],
  ['created_at', 'text', true],
  ['scheduled_at', 'text', true],
  ['script_hash', 'text', false],
  ['replay_of', 'text', false],
  ['released_by', 'list', false],
  ['awaited_by', 'text', false],
  ['delivery_headers', 'map', false],
  ['delivery_query_params', 'map', false],
  ['trace', 'text', false],
];
const KNOWN = new Set<string>(FIELDS.map(([k]) => k));

const isMap = (v: unknown): boolean => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  for (const k in v) if (k === '__proto__' || typeof (v as Record<string, unknown>)[k] !== 'string') return false;
  return true;
};

const fits = (v: unknown, kind: Kind): boolean => {
  switch (kind) {
    case 'text':
      return typeof v === 'string';
    case 'nonEmpty':
      return typeof v === 'string' && v.length > 0;
    case 'count':
      return Number.isSafeInteger(v) && (v as number) >= 0;
    case 'positive':
      return Number.isSafeInteger(v) && (v as number) >= 1;
    case 'map':
      return isMap(v);
    case 'list':
      return Array.isArray(v) && v.every((x) => typeof x === 'string');
  }
};

/**
 * What WebhookSchema.parse returns for a well-formed record (same fields, defaults and key
 * order), checked by hand: every record of a burst goes through here on the worker. Undefined
 * for anything unusual (an unknown field, a wrong type), which zod then parses or rejects as always.
 */
const wellFormed = (obj: Record<string, unknown>): Webhook | undefined => {
  for (const k in obj) if (!KNOWN.has(k)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, kind, required] of FIELDS) {
    let v = obj[key];
    if (v === undefined) {
      if (required) return undefined;
      if (key === 'headers') v = {};
      else if (key === 'deferrals') v = 0;
      else continue;
    } else if (!fits(v, kind)) return undefined;
    out[key] = v;
  }
  return out as Webhook;
};

/** Parses a webhook record, keeping the payload's bytes exactly as they were enqueued. */
export const decodeWebhook = (text: string): Webhook => {
  const span = memberSpan(text, 0, 'payload');
  if (!span) throw new SyntaxError('webhook record has no payload');
  // Parsing the whole record also proves the payload is valid JSON; its bytes come from the span.
  const obj = JSON.parse(text) as Record<string, unknown>;
  obj.payload = slice(text, span);
  return wellFormed(obj) ?? WebhookSchema.parse(obj);
};
