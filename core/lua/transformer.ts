import { defaultLuaEngine, type RunOptions } from './engine';
import { lowerKeys } from './headers';
import { checkHeaders } from '../domain/headers';
import { RESERVED_HEADERS } from '../domain/reserved-headers';
import { checkTemplates } from '../domain/templates';
import type { EnqueueItem } from '../domain/enqueue';
import { hostAllowed } from './http';
import type { LuaServices } from './types';
import { stringifyJson } from './values';

// Transformers turn one inbound request (/incoming/:script) into N webhooks.
// howk.post only COLLECTS: nothing is enqueued by the script itself, so the caller
// enqueues the whole list after a successful run, or nothing when the run fails
// (an error after the 5th post discards all 5).

export type TransformerInput = {
  /** The inbound body as received (raw text). */
  body: string;
  headers: Record<string, string>;
  query?: Record<string, string | string[]>;
  method?: string;
  path?: string;
  /** Script name: its kv store is the transformer's own (keys.kv). */
  script?: string;
};

export type TransformerOptions = RunOptions & {
  /** Endpoint hosts howk.post accepts ("example.com", "*.example.com"); undefined = any host. */
  allowedDomains?: readonly string[];
  /** Most webhooks one run may post. */
  maxWebhooks?: number;
};

/** The webhooks posted, as enqueue items (never with a signing_secret). */
export type TransformerResult = { webhooks: EnqueueItem[]; cpu_ms: number };

const MAX_KEY = 256;

const collect = (args: unknown[], allowed: readonly string[] | undefined): EnqueueItem => {
  const [endpoint, payload, opts] = args;
  if (typeof endpoint !== 'string') throw new Error('endpoint must be a string');
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new Error(`invalid endpoint URL: ${endpoint}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`endpoint scheme not allowed: ${url.protocol}`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (allowed && !hostAllowed(host, allowed)) throw new Error(`endpoint domain not allowed: ${host}`);

  let raw: string;
  if (payload === undefined) throw new Error('payload is required');
  if (typeof payload === 'string') {
    // A string is taken as JSON text, as is: its bytes are what the receiver gets.
    try {
      JSON.parse(payload);
    } catch {
      throw new Error('payload string is not valid JSON (pass a table to have it encoded)');
    }
    raw = payload;
  } else raw = stringifyJson(payload);

  const o = (opts ?? {}) as Record<string, unknown>;
  if (typeof o !== 'object' || Array.isArray(o)) throw new Error('opts must be a table');
  const headers = checkHeaders(o.headers, 'opts.headers');
  for (const k of Object.keys(headers)) if (RESERVED_HEADERS.has(k)) throw new Error(`opts.headers: ${k} is reserved`);
  const wh: EnqueueItem = { endpoint: url.href, payload: raw, headers };
  if (o.idempotency_key !== undefined) {
    if (typeof o.idempotency_key !== 'string' || o.idempotency_key.length === 0 || o.idempotency_key.length > MAX_KEY)
      throw new Error(`opts.idempotency_key must be a string of 1-${MAX_KEY} characters`);
    wh.idempotency_key = o.idempotency_key;
  }
  if (o.max_attempts !== undefined) {
    const n = Number(o.max_attempts);
    if (!Number.isInteger(n) || n < 1 || n > 1000) throw new Error('opts.max_attempts must be an integer between 1 and 1000');
    wh.max_attempts = n;
  }
  if (o.delivery_headers !== undefined) wh.delivery_headers = checkTemplates(o.delivery_headers, 'header');
  if (o.delivery_query_params !== undefined) wh.delivery_query_params = checkTemplates(o.delivery_query_params, 'query');
  return wh;
};

export const runTransformer = async (code: string, input: TransformerInput, opts: TransformerOptions = {}): Promise<TransformerResult> => {
  const engine = opts.engine ?? defaultLuaEngine();
  const max = opts.maxWebhooks ?? 100;
  const webhooks: EnqueueItem[] = [];
  const emit = (args: unknown[]): string | undefined => {
    if (webhooks.length >= max) return `howk.post: too many webhooks (limit ${max})`;
    try {
      webhooks.push(collect(args, opts.allowedDomains));
      return undefined;
    } catch (e) {
      return `howk.post: ${(e as Error).message}`;
    }
  };
  const request = {
    body: input.body,
    headers: lowerKeys(input.headers),
    query: input.query ?? {},
    method: input.method ?? 'POST',
    path: input.path ?? '',
  };
  const services: LuaServices = { ...opts.services, kvScope: opts.services?.kvScope ?? { kind: 'transformer', id: input.script ?? '' } };
  // A failure throws here, before `webhooks` is returned: all or nothing.
  const out = await engine.run({ code, mode: 'transform', input: { request }, services, limits: opts.limits, emit });
  return { webhooks, cpu_ms: out.cpuMs };
};
