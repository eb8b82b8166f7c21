import { defaultLuaEngine, type RunOptions } from './engine';
import { LuaRuntimeError } from './errors';
import { lowerKeys } from './headers';
import { checkHeaders } from '../domain/headers';
import { RESERVED_HEADERS } from '../domain/reserved-headers';
import type { LuaServices } from './types';
import { jsonEqual, stringifyJson } from './values';

// The per-config delivery script: runs before each attempt, may rewrite the body,
// set or remove headers and add retryable statuses. It sees the endpoint and attempt
// (read-only `webhook` table) but the result has no field for them: the endpoint,
// the signature (computed after the script, over the returned body) and the attempt
// budget are out of its reach by construction.

export type DeliveryInput = {
  /** The payload bytes as enqueued (raw JSON text). */
  payload: string;
  headers: Record<string, string>;
  config_id: string;
  /** 0-based, as Webhook.attempt. */
  attempt: number;
  webhook_id?: string;
  endpoint?: string;
  max_attempts?: number;
  /** Statuses already retryable for this webhook; the script may add to them. */
  retry_on_status?: number[];
};

export type DeliveryScriptResult = {
  /** The body to sign and send: the original bytes, unchanged, unless the script changed it. */
  body: string;
  body_changed: boolean;
  /** Lower-case names; reserved headers the script tried to set are left out (see ignored_headers). */
  headers: Record<string, string>;
  retry_on_status: number[] | undefined;
  ignored_headers: string[];
  cpu_ms: number;
};

const statuses = (v: unknown): number[] | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== 'object' || v === null) throw new Error('request.retry_on_status must be a list of status codes');
  const list = Array.isArray(v) ? v : Object.keys(v).length === 0 ? [] : null;
  if (!list) throw new Error('request.retry_on_status must be a list of status codes');
  const out = new Set<number>();
  for (const x of list) {
    const n = Number(x);
    if (!Number.isInteger(n) || n < 100 || n > 599) throw new Error(`request.retry_on_status: ${String(x)} is not an HTTP status`);
    out.add(n);
  }
  return [...out].sort((a, b) => a - b);
};

export const runDeliveryScript = async (code: string, input: DeliveryInput, opts: RunOptions = {}): Promise<DeliveryScriptResult> => {
  const engine = opts.engine ?? defaultLuaEngine();
  const request: Record<string, unknown> = { body: input.payload, headers: lowerKeys(input.headers) };
  if (input.retry_on_status) request.retry_on_status = input.retry_on_status;
  const webhook = {
    id: input.webhook_id,
    config_id: input.config_id,
    endpoint: input.endpoint,
    attempt: input.attempt,
    max_attempts: input.max_attempts,
  };
  const services: LuaServices = { ...opts.services, kvScope: opts.services?.kvScope ?? { kind: 'config', id: input.config_id } };
  const out = await engine.run({ code, mode: 'delivery', input: { request, webhook }, services, limits: opts.limits });
  const [changed, newBody, headers, retry, payload] = out.finished ?? [];
  try {
    let body = input.payload;
    let bodyChanged = false;
    if (changed === true) {
      if (typeof newBody !== 'string') throw new Error('request.body must be a string');
      body = newBody;
      bodyChanged = body !== input.payload;
    } else if (payload !== undefined && !jsonEqual(payload, JSON.parse(input.payload))) {
      // Only a payload that really differs is re-serialized: reading it must not change the bytes.
      body = stringifyJson(payload);
      bodyChanged = true;
    }
    const all = checkHeaders(headers, 'request.headers');
    const kept: Record<string, string> = {};
    const ignored: string[] = [];
    for (const [k, v] of Object.entries(all)) {
      if (RESERVED_HEADERS.has(k)) ignored.push(k);
      else kept[k] = v;
    }
    return { body, body_changed: bodyChanged, headers: kept, retry_on_status: statuses(retry), ignored_headers: ignored, cpu_ms: out.cpuMs };
  } catch (e) {
    throw new LuaRuntimeError(`script result: ${(e as Error).message}`);
  }
};
