import { memberSpan, slice } from '../domain/raw-json';
import { WebhookSchema, type Webhook } from '../domain/webhook';

// The record of howk.pending and howk.slow (not compacted: no tombstone). Key: the config id,
// so that one config's webhooks keep their order in one partition. Value: the webhook's
// snake_case fields with the payload spliced in last as raw JSON, so its bytes never change.
// Schema: WebhookSchema (core/domain/webhook.ts, the model policy/ and ports/ see).

export { WebhookSchema, type Webhook };

export const webhookKey = (w: Pick<Webhook, 'config_id'>): string => w.config_id;

/** JSON text of the last string seen: the records of a burst share their config, mostly their endpoint and their stamp. */
const lastJson = () => {
  let last: string | undefined;
  let json = '';
  return (v: string): string => (v === last ? json : ((last = v), (json = JSON.stringify(v))));
};
const configJson = lastJson();
const endpointJson = lastJson();
const stampJson = lastJson();
const str = JSON.stringify;

const isEmpty = (o: object): boolean => {
  for (const _ in o) return false;
  return true;
};

/**
 * The record of a webhook: its fields written out one by one in a fixed order (an absent
 * optional field is left out, as JSON.stringify leaves out undefined), the payload spliced in
 * raw, last. Written out rather than a loop over the fields: every record of an enqueue burst
 * and of a consumed batch's retries goes through here.
 */
export const encodeWebhook = (w: Webhook): string => {
  let s = `{"id":${str(w.id)},"config_id":${configJson(w.config_id)},"endpoint":${endpointJson(w.endpoint)},"endpoint_hash":${str(w.endpoint_hash)}`;
  if (w.headers !== undefined) s += `,"headers":${isEmpty(w.headers) ? '{}' : str(w.headers)}`;
  if (w.body_base64 !== undefined) s += `,"body_base64":${str(w.body_base64)}`;
  if (w.content_type !== undefined) s += `,"content_type":${str(w.content_type)}`;
  if (w.idempotency_key !== undefined) s += `,"idempotency_key":${str(w.idempotency_key)}`;
  if (w.signing_secret !== undefined) s += `,"signing_secret":${str(w.signing_secret)}`;
  if (w.delivery_headers !== undefined) s += `,"delivery_headers":${str(w.delivery_headers)}`;
  if (w.delivery_query_params !== undefined) s += `,"delivery_query_params":${str(w.delivery_query_params)}`;
  // Integers by the schema: their text is their JSON.
  s += `,"attempt":${w.attempt},"max_attempts":${w.max_attempts}`;
  if (w.deferrals !== undefined) s += `,"deferrals":${w.deferrals}`;
  s += `,"created_at":${stampJson(w.created_at)},"scheduled_at":${stampJson(w.scheduled_at)}`;
  if (w.trace !== undefined) s += `,"trace":${str(w.trace)}`;
  if (w.awaited_by !== undefined) s += `,"awaited_by":${str(w.awaited_by)}`;
  if (w.script_hash !== undefined) s += `,"script_hash":${str(w.script_hash)}`;
  if (w.replay_of !== undefined) s += `,"replay_of":${str(w.replay_of)}`;
  if (w.released_by !== undefined) s += `,"released_by":${str(w.released_by)}`;
  return `${s},"payload":${w.payload}}`;
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
