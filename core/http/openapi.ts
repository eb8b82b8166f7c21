import { z } from 'zod';
import type { Config } from '../config/schema';
import { AttemptRecord, WebhookStatusSchema } from '../domain/status';
import { routeAccess } from '../security/route-access';
import { CONFIG_ID } from '../domain/config-id';
import { enqueueItemSchema } from '../domain/enqueue';
import { CreatedKeySchema, CreateKeyBody, KeyViewSchema } from './routes/keys';
import { PutSecretBody, RotatedSecretSchema, RotateSecretBody, SecretViewSchema } from './routes/secrets';

// OpenAPI 3.1 from the same zod schemas that validate requests (z.toJSONSchema). The limits
// in it are the running server's (`/openapi.json`); docs/openapi.json is built from the
// defaults. Scopes in each description come from the auth middleware's own route map.

type Json = Record<string, unknown>;

const schema = (s: z.ZodType, io: 'input' | 'output' = 'output'): Json => {
  const { $schema: _s, ...rest } = z.toJSONSchema(s, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
  return rest;
};

const ErrorBody = z.object({
  error: z.looseObject({ code: z.string(), message: z.string(), field: z.string().nullable().optional(), limit: z.number().optional(), issues: z.array(z.object({ path: z.string(), message: z.string() })).optional() }),
});
const EnqueueResponse = z.object({ webhook_id: z.string(), status: z.enum(['pending', 'duplicate']) });
const BatchResponse = z.object({ count: z.number().int(), accepted: z.number().int(), results: z.array(z.object({ index: z.number().int(), webhook_id: z.string(), status: z.enum(['pending', 'duplicate']), endpoint: z.string() })) });
const StatusView = WebhookStatusSchema.omit({ updated_at_ns: true }).extend({ history: z.array(AttemptRecord) });
const StatsWindow = z.object({ enqueued: z.number(), delivered: z.number(), failed: z.number(), exhausted: z.number(), dead_lettered: z.number(), retried: z.number(), unique_endpoints: z.number() });
const Check = z.object({ ok: z.boolean(), latency_ms: z.number(), error: z.string().optional() });

const enqueueBody = (c: Config): Json => {
  const item = schema(enqueueItemSchema(c.api), 'input') as { properties: Record<string, Json> };
  // Refinements zod cannot express in JSON Schema, written out for clients and fuzzers.
  item.properties.endpoint = { ...item.properties.endpoint, format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', description: 'absolute http(s) URL; delivered only if it resolves to an allowed address' };
  item.properties.headers = {
    ...item.properties.headers,
    maxProperties: c.api.max_headers,
    additionalProperties: { type: 'string', maxLength: c.api.max_header_value_length, pattern: '^[\\t\\x20-\\x7e\\x80-\\xff]*$' },
    description: 'custom headers: names are RFC 9110 tokens; values hold only tab, printable ASCII and U+0080-U+00FF (one byte each); hop-by-hop and client-managed headers (Connection, Keep-Alive, Upgrade, Expect, Transfer-Encoding, TE, Trailer, Proxy-*, Host, Content-Length), Content-Type and the signature headers are refused',
  };
  item.properties.signing_secret = { ...item.properties.signing_secret, description: 'whsec_<standard base64 of at least 16 bytes> (Standard Webhooks), or 8-512 characters used as they are' };
  item.properties.payload = { description: 'any JSON value; its bytes are delivered exactly as sent' };
  return item;
};

const json = (s: Json, description: string, headers?: Json) => ({ description, ...(headers ? { headers } : {}), content: { 'application/json': { schema: s } } });
const errorRef = { $ref: '#/components/schemas/Error' };
const errors = {
  default: json(errorRef, 'Error: 400 invalid input (names the field), 401 no or bad key, 403 scope or config not allowed, 404, 413/431 over a limit, 429 rate limited (Retry-After), 501 not configured, 503 dependency unavailable (Retry-After)'),
};
const configParam = { name: 'config', in: 'path', required: true, schema: { type: 'string', pattern: CONFIG_ID.source } };

const hashParam = { name: 'hash', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9a-f]{32}$' } };
const EndpointViewSchema = z.object({
  endpoint_hash: z.string(),
  circuit: z.object({ state: z.enum(['CLOSED', 'OPEN', 'HALF_OPEN']), failures: z.number(), open_until: z.number().nullable(), successes: z.number(), opened_count: z.number() }),
  inflight: z.number(),
  paused: z.boolean(),
  draining: z.boolean(),
  parked_while_paused: z.number(),
  last_errors: z.array(z.object({ at: z.string(), error: z.string() })),
  concurrency: z.object({
    limit: z.number().int().describe('Adaptive in-flight limit of the endpoint (what the slow lane paces by)'),
    fast_lane_limit: z.number().int().describe('Its share of the fast lane: min(limit, concurrency.max_inflight_per_endpoint); 0 when the endpoint limit is off'),
    latency_ms: z.object({
      estimate: z.number().nullable().describe('Recent latency (moving average of answers and timeouts)'),
      min: z.number().nullable().describe('Lowest latency seen (drifts slowly towards a lasting change)'),
      p50: z.number().nullable(),
      p90: z.number().nullable(),
      samples: z.number().int().describe('Samples within concurrency.latency_window behind p50/p90'),
    }),
    inflight: z.number().int(),
    queued: z.number().int().describe('Webhooks told to wait at the limit in the fast lane within the last 2 s'),
    slow: z.boolean().describe('At its limit, a slow endpoint is diverted to the slow lane; a fast one waits its turn'),
    slow_reason: z.enum(['latency', 'timeouts']).nullable(),
  }),
});
const PauseResult = z.looseObject({
  paused: z.boolean(),
  released: z.number().optional(),
  drain: z.enum(['drained', 'paused', 'running', 'not_paused', 'lost']).optional().describe('resume only: drained (pause over), paused (paused again during the drain), running (another resume drains), not_paused, lost (another drain took over)'),
});

const ScriptPutBody = z.object({ script: z.string().min(1), apply_to_children: z.boolean().optional() });
const ScriptPutResult = z.object({ config_id: z.string(), sha256: z.string(), bytes: z.number().int(), apply_to_children: z.boolean(), updated_at: z.string() });
const ScriptView = z.object({ config_id: z.string(), script: z.string(), sha256: z.string(), apply_to_children: z.boolean(), updated_at: z.string() });
const ScriptTestBody = z.object({ payload: z.unknown(), headers: z.record(z.string(), z.string()).optional(), script: z.string().optional(), attempt: z.number().int().min(0).optional(), endpoint: z.string().optional() });
const ScriptTestResult = z.object({ config_id: z.string(), request: z.object({ body: z.string(), headers: z.record(z.string(), z.string()) }), body_changed: z.boolean(), retry_on_status: z.array(z.number().int()).nullable(), ignored_headers: z.array(z.string()), credentials_used: z.array(z.string()), refused: z.object({ reason_type: z.literal('credential_host_not_allowed'), message: z.string() }).nullable(), cpu_ms: z.number(), duration_ms: z.number() });
const IncomingResult = z.object({ webhooks: z.array(z.object({ id: z.string(), endpoint: z.string() })), count: z.number().int() });

type Op = { method: 'get' | 'post' | 'put' | 'delete'; path: string; summary: string; params?: Json[]; body?: Json; bodyRequired?: boolean; ok: Record<string, Json>; tag: string };

const ops = (c: Config): Op[] => [
  { method: 'get', path: '/health', tag: 'health', summary: 'Liveness', ok: { '200': json(schema(z.object({ status: z.literal('ok') })), 'alive') } },
  { method: 'get', path: '/ready', tag: 'health', summary: 'Readiness: every dependency answers', ok: { '200': json(schema(z.object({ status: z.string(), dependencies: z.array(Check.extend({ name: z.string() })) })), 'ready'), '503': json(schema(z.object({ status: z.string(), dependencies: z.array(Check.extend({ name: z.string() })) })), 'not ready') } },
  { method: 'get', path: '/health/dependencies', tag: 'health', summary: 'Per-dependency checks', ok: { '200': json(schema(z.object({ status: z.string(), dependencies: z.record(z.string(), Check) })), 'all ok'), '503': json(schema(z.object({ status: z.string(), dependencies: z.record(z.string(), Check) })), 'degraded') } },
  { method: 'get', path: '/openapi.json', tag: 'health', summary: 'This document', ok: { '200': json({ type: 'object' }, 'OpenAPI 3.1') } },
  { method: 'get', path: '/metrics', tag: 'health', summary: 'Prometheus metrics of this api process: delivery stage and process histograms (docs/OPERATIONS.md, Metrics)', ok: { '200': { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain': { schema: { type: 'string' } } } } } },
  {
    method: 'post', path: '/webhooks/{config}/enqueue', tag: 'webhooks', summary: 'Enqueue one webhook (202 once it is durably in Kafka)', params: [configParam], body: enqueueBody(c), bodyRequired: true,
    ok: { '202': json(schema(EnqueueResponse), 'accepted', { Location: { schema: { type: 'string' } } }), '200': json(schema(EnqueueResponse), 'duplicate idempotency_key: the first webhook') },
  },
  {
    method: 'post', path: '/webhooks/{config}/enqueue/batch', tag: 'webhooks', summary: 'Enqueue up to api.max_batch_size webhooks; one invalid item rejects the batch', params: [configParam], bodyRequired: true,
    body: { type: 'object', properties: { webhooks: { type: 'array', minItems: 1, maxItems: c.api.max_batch_size, items: enqueueBody(c) } }, required: ['webhooks'] },
    ok: { '202': json(schema(BatchResponse), 'accepted') },
  },
  { method: 'get', path: '/webhooks/{id}/status', tag: 'webhooks', summary: 'State, attempts and the last 20 attempts of a webhook', params: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], ok: { '200': json(schema(StatusView), 'status') } },
  { method: 'get', path: '/stats', tag: 'webhooks', summary: 'Counters of the last hour and the last 24 hours', ok: { '200': json(schema(z.object({ last_1h: StatsWindow, last_24h: StatsWindow })), 'stats') } },
  { method: 'get', path: '/endpoints/{hash}', tag: 'endpoints', summary: 'Circuit state and counts, adaptive limit, latency, in-flight and queued deliveries, slowness, pause and last errors of one endpoint', params: [hashParam], ok: { '200': json(schema(EndpointViewSchema), 'endpoint') } },
  { method: 'post', path: '/endpoints/{hash}/circuit/reset', tag: 'endpoints', summary: 'Close the endpoint\'s circuit now', params: [hashParam], ok: { '200': json(schema(EndpointViewSchema), 'endpoint') } },
  { method: 'post', path: '/endpoints/{hash}/pause', tag: 'endpoints', summary: 'Hold deliveries to the endpoint (nothing is lost)', params: [hashParam], ok: { '200': json(schema(PauseResult), 'paused') } },
  { method: 'post', path: '/endpoints/{hash}/resume', tag: 'endpoints', summary: 'Release held deliveries in arrival order', params: [hashParam], ok: { '200': json(schema(PauseResult), 'resumed') } },
  { method: 'post', path: '/configs/{config}/pause', tag: 'endpoints', summary: 'Hold deliveries of every endpoint of the config', params: [configParam], ok: { '200': json(schema(PauseResult), 'paused') } },
  { method: 'post', path: '/configs/{config}/resume', tag: 'endpoints', summary: 'Release the config\'s held deliveries in arrival order', params: [configParam], ok: { '200': json(schema(PauseResult), 'resumed') } },
  { method: 'post', path: '/keys', tag: 'keys', summary: 'Create an API key (the key is shown once)', body: schema(CreateKeyBody, 'input'), bodyRequired: true, ok: { '201': json(schema(CreatedKeySchema), 'created') } },
  { method: 'get', path: '/keys', tag: 'keys', summary: 'List API keys (never their secret or hash)', ok: { '200': json(schema(z.object({ keys: z.array(KeyViewSchema) })), 'keys') } },
  { method: 'delete', path: '/keys/{id}', tag: 'keys', summary: 'Revoke an API key: it stops working at once', params: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], ok: { '200': json(schema(KeyViewSchema), 'revoked') } },
  { method: 'get', path: '/configs/{config}/secret', tag: 'secrets', summary: 'Ids and validity of the config\'s signing secrets (never values)', params: [configParam], ok: { '200': json(schema(SecretViewSchema), 'secrets') } },
  { method: 'put', path: '/configs/{config}/secret', tag: 'secrets', summary: 'Set the config\'s signing secret, replacing all others at once', params: [configParam], body: schema(PutSecretBody, 'input'), bodyRequired: true, ok: { '200': json(schema(SecretViewSchema), 'set') } },
  { method: 'post', path: '/configs/{config}/secret/rotate', tag: 'secrets', summary: 'Add a new signing secret; the previous one stays valid for signing.rotation_overlap', params: [configParam], body: schema(RotateSecretBody, 'input'), ok: { '200': json(schema(RotatedSecretSchema), 'rotated') } },
  { method: 'delete', path: '/configs/{config}/secret', tag: 'secrets', summary: 'Remove the config\'s secrets (deliveries fall back to signing.default_secret)', params: [configParam], ok: { '200': json(schema(SecretViewSchema), 'removed') } },
  { method: 'put', path: '/config/{config}/script', tag: 'scripts', summary: 'Set the config\'s delivery script (Lua; syntax checked: 400 with the line; 413 over lua.max_script_bytes). Used by configs under this namespace (a:b:c falls back to a:b, then a) only with apply_to_children (JSON field or ?apply_to_children=true). An empty script is a 400 (remove one with DELETE)', params: [configParam], body: schema(ScriptPutBody, 'input'), bodyRequired: true, ok: { '200': json(schema(ScriptPutResult), 'stored') } },
  { method: 'get', path: '/config/{config}/script', tag: 'scripts', summary: 'The config\'s own delivery script', params: [configParam], ok: { '200': json(schema(ScriptView), 'script') } },
  { method: 'delete', path: '/config/{config}/script', tag: 'scripts', summary: 'Remove the config\'s delivery script', params: [configParam], ok: { '200': json(schema(z.object({ config_id: z.string(), deleted: z.literal(true) })), 'removed') } },
  { method: 'post', path: '/config/{config}/script/test', tag: 'scripts', summary: 'Dry run of the given or stored script on a sample payload: the request it would send (any value holding a decrypted credential is [redacted]), and timing (nothing is sent)', params: [configParam], body: schema(ScriptTestBody, 'input'), bodyRequired: true, ok: { '200': json(schema(ScriptTestResult), 'transformed request') } },
  { method: 'post', path: '/incoming/{name}', tag: 'incoming', summary: 'Run a transformer on the raw body; every howk.post of the run is enqueued, all or nothing (422/400 with the Lua error and its reason_type otherwise). Basic auth when the script has a passwd file', params: [{ name: 'name', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' } }], body: { description: 'any body; the script reads it raw' }, ok: { '200': json(schema(IncomingResult), 'enqueued') } },
];

/** Scope text for an operation, from the same map the middleware enforces. */
export const scopeOf = (method: string, path: string): string => {
  const a = routeAccess(method, path.replace(/\{[^}]+\}/g, 'x'));
  return a.kind === 'open' ? 'none (open)' : a.scope;
};

export const buildOpenApi = (c: Config): Json => {
  const paths: Record<string, Record<string, Json>> = {};
  for (const op of ops(c)) {
    const scope = scopeOf(op.method, op.path);
    (paths[op.path] ??= {})[op.method] = {
      tags: [op.tag],
      summary: op.summary,
      description: `Scope: ${scope}.`,
      operationId: `${op.method}${op.path.replace(/[{}]/g, '').replace(/[/.](\w)/g, (_m, ch: string) => ch.toUpperCase())}`,
      ...(scope.startsWith('none') ? { security: [] } : {}),
      ...(op.params ? { parameters: op.params } : {}),
      ...(op.body ? { requestBody: { required: op.bodyRequired ?? false, content: { 'application/json': { schema: op.body } } } } : {}),
      responses: { ...op.ok, ...errors },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Howk API', version: '0.1.0', description: 'Webhook delivery: enqueue, status, API keys and signing secrets. Every route but health needs `Authorization: Bearer howk_...` with the scope named in its description (when api.auth.enabled).' },
    servers: [{ url: '/' }],
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'howk_<id>_<secret> API key' } },
      schemas: { Error: schema(ErrorBody) },
    },
  };
};
