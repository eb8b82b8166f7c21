import { z } from 'zod';
import type { Config } from '../../config/schema';
import { enqueueItemSchema, parseBatchBody, parseEnqueueBody } from '../../domain/enqueue';
import { ConfigParam } from '../params';
import { toJsonSchema, type Json, type Route } from '../route';
import { limitBody } from './body-limit';
import { admitEnqueue, enqueueMaybeWaiting, ItemStatus, SyncOutcome, type ItemView } from './enqueue-wait';

const EnqueueResponse = z.object({ webhook_id: z.string(), status: ItemStatus, outcome: SyncOutcome.optional() });
const BatchResponse = z.object({
  count: z.number().int(),
  accepted: z.number().int(),
  results: z.array(z.object({ index: z.number().int(), webhook_id: z.string(), status: ItemStatus, endpoint: z.string(), outcome: SyncOutcome.optional() })),
});
const WaitQuery = () =>
  z.object({
    wait: z
      .string()
      .optional()
      .describe(
        'Hold the answer until the first attempt of each webhook (or this long): 5s, 500ms or 5 (seconds); cut to api.sync_max_wait. Also Prefer: wait=5. A runtime without waits (the edge) refuses the query with 400 naming wait, and answers Prefer: wait at once (Howk-Wait: unsupported)',
      ),
  });
const waitHeaders = {
  'Howk-Wait': {
    schema: { type: 'string', enum: ['done', 'expired', 'busy', 'unsupported'] },
    description: 'present when a wait was asked: how it ended (busy: not granted, api.sync_max_waiting requests already wait, or api.sync_max_waiting_per_config of the config)',
  },
  'Preference-Applied': { schema: { type: 'string' }, description: 'wait=<seconds> when the request waited' },
};
const refusals = {
  '409': {
    description:
      'idempotency_key_conflict: the idempotency_key was first used for another request (endpoint, headers, body or content_type differ); the error names the first webhook. Nothing enqueued',
  },
  '429': { description: 'the config has api.max_outstanding_per_config webhooks outstanding (Retry-After); nothing enqueued' },
  '503': {
    description:
      'over api.max_inflight_requests, Kafka unavailable, or another request with the same idempotency_key in flight past 3 s or failed while this one waited (Retry-After); nothing enqueued',
  },
};

/**
 * The batch answer's JSON text: what JSON.stringify gives for `{count, accepted, results:
 * [{index, ...item}]}`, written out for the answer of a request that did not wait (ids Howk
 * made, a handful of endpoints each stringified once): an object per item and the generic
 * stringify cost more than the rest of the route. A waited answer (outcomes) is stringified.
 */
export const batchAnswer = (items: ItemView[], accepted: number, waited: boolean): string => {
  if (waited) return JSON.stringify({ count: items.length, accepted, results: items.map((r, index) => ({ index, ...r })) });
  let out = `{"count":${items.length},"accepted":${accepted},"results":[`;
  let endpoint: string | undefined;
  let endpointJson = '';
  for (let i = 0; i < items.length; i++) {
    const r = items[i]!;
    if (r.endpoint !== endpoint) endpointJson = JSON.stringify((endpoint = r.endpoint));
    // A new webhook's id is Howk's own (wh_ and base32); a duplicate's comes from the hot state.
    const id = r.status === 'pending' ? `"${r.webhook_id}"` : JSON.stringify(r.webhook_id);
    out += `${i === 0 ? '' : ','}{"index":${i},"webhook_id":${id},"status":"${r.status}","endpoint":${endpointJson}}`;
  }
  return `${out}]}`;
};

/** One enqueue item as JSON Schema, with the refinements zod cannot express written out for clients and fuzzers. */
export const enqueueBody = (c: Config): Json => {
  const item = toJsonSchema(enqueueItemSchema(c.api), 'input') as { properties: Record<string, Json> };
  item.properties.endpoint = {
    ...item.properties.endpoint,
    format: 'uri',
    pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
    description: 'absolute http(s) URL; delivered only if it resolves to an allowed address',
  };
  item.properties.headers = {
    ...item.properties.headers,
    maxProperties: c.api.max_headers,
    additionalProperties: { type: 'string', maxLength: c.api.max_header_value_length, pattern: '^[\\t\\x20-\\x7e\\x80-\\xff]*$' },
    description:
      'custom headers: names are RFC 9110 tokens; values hold only tab, printable ASCII and U+0080-U+00FF (one byte each); hop-by-hop and client-managed headers (Connection, Keep-Alive, Upgrade, Expect, Transfer-Encoding, TE, Trailer, Proxy-*, Host, Content-Length), Content-Type and the signature headers are refused',
  };
  item.properties.signing_secret = {
    ...item.properties.signing_secret,
    description: 'whsec_<standard base64 of at least 16 bytes> (Standard Webhooks), or 8-512 characters used as they are',
  };
  item.properties.payload = { description: 'any JSON value; its bytes are delivered exactly as sent (application/json). Required unless body_base64 is given' };
  item.properties.body_base64 = {
    ...item.properties.body_base64,
    pattern: '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$',
    description: 'a non-JSON body (CSV, XML, a form...): its bytes in standard padded base64, delivered and signed exactly as decoded; needs content_type, excludes payload',
  };
  item.properties.content_type = {
    ...item.properties.content_type,
    description: 'the Content-Type of body_base64 (type/subtype and parameters, e.g. text/csv; charset=utf-8); only with body_base64',
  };
  return item;
};

/** JSON Schema of a body made of enqueue fields (retry, replay): those fields written out as enqueueBody has them. */
export const withEnqueueFields = (c: Config, s: z.ZodObject): Json => {
  const j = toJsonSchema(s, 'input') as { properties: Record<string, Json> };
  const item = (enqueueBody(c) as { properties: Record<string, Json> }).properties;
  for (const k of Object.keys(j.properties)) if (item[k]) j.properties[k] = item[k];
  return j;
};

export const enqueueRoutes: Route[] = [
  {
    method: 'post',
    path: '/webhooks/:config/enqueue',
    tag: 'webhooks',
    summary: 'Enqueue one webhook (202 once it is durably in Kafka)',
    access: 'enqueue',
    config: { from: 'param', name: 'config' },
    request: { params: ConfigParam, query: WaitQuery, body: enqueueBody, bodyRequired: true },
    responses: {
      '202': { description: 'accepted, durably in Kafka; no outcome yet', schema: EnqueueResponse, headers: { Location: { schema: { type: 'string' } }, ...waitHeaders } },
      '200': {
        description: 'duplicate idempotency_key (the first webhook), or the outcome of the first attempt the request waited for',
        schema: EnqueueResponse,
        headers: { Location: { schema: { type: 'string' } }, ...waitHeaders },
      },
      ...refusals,
    },
    handler: (d) => [
      limitBody(d.config.api.max_request_size),
      async (c) => {
        const { configId, ms, body: item } = await admitEnqueue(c, d, parseEnqueueBody);
        const { items } = await enqueueMaybeWaiting(c, d, configId, ms, (o) => d.enqueue(configId, [item], o));
        const { endpoint: _e, ...r } = items[0]!;
        c.header('Location', `/webhooks/${r.webhook_id}/status`);
        return c.json(r, r.status === 'pending' ? 202 : 200);
      },
    ],
  },
  {
    method: 'post',
    path: '/webhooks/:config/enqueue/batch',
    tag: 'webhooks',
    summary: 'Enqueue up to api.max_batch_size webhooks; one invalid item rejects the batch',
    access: 'enqueue',
    config: { from: 'param', name: 'config' },
    request: {
      params: ConfigParam,
      query: WaitQuery,
      bodyRequired: true,
      body: (c) => ({ type: 'object', properties: { webhooks: { type: 'array', minItems: 1, maxItems: c.api.max_batch_size, items: enqueueBody(c) } }, required: ['webhooks'] }),
    },
    responses: {
      '202': { description: 'accepted, durably in Kafka', schema: BatchResponse, headers: waitHeaders },
      '200': { description: 'the request waited and every webhook has its first outcome (or is a duplicate)', schema: BatchResponse, headers: waitHeaders },
      ...refusals,
    },
    handler: (d) => [
      limitBody(d.config.api.max_request_size),
      async (c) => {
        const { configId, ms, body: parsed } = await admitEnqueue(c, d, parseBatchBody);
        const { items, waited } = await enqueueMaybeWaiting(c, d, configId, ms, (o) => d.enqueue(configId, parsed, o));
        const accepted = items.filter((r) => r.status !== 'duplicate').length;
        const settled = waited && !items.some((r) => r.status === 'pending');
        return c.body(batchAnswer(items, accepted, waited), settled ? 200 : 202, { 'Content-Type': 'application/json' });
      },
    ],
  },
];
