import type { Config } from '../config/schema';
import { IDEMPOTENCY_AND_RAW_BODIES } from './api-docs-enqueue';
import { buildOpenApi } from './openapi';
import { ROUTES } from './route-table';

// docs/API.md, generated from the OpenAPI document (itself generated from the zod schemas).

type Json = Record<string, any>;

const typeOf = (s: Json | undefined): string => {
  if (!s) return 'any';
  if (s.$ref) return String(s.$ref).split('/').pop()!;
  if (s.enum) return s.enum.map((v: unknown) => JSON.stringify(v)).join(' \\| ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  if (s.anyOf) return s.anyOf.map(typeOf).join(' \\| ');
  if (s.type === 'array') return `${typeOf(s.items)}[]`;
  if (Array.isArray(s.type)) return s.type.join(' \\| ');
  return s.type ?? 'any';
};

const limits = (s: Json): string => {
  const l: string[] = [];
  if (s.minLength !== undefined) l.push(`≥${s.minLength} chars`);
  if (s.maxLength !== undefined) l.push(`≤${s.maxLength} chars`);
  if (s.minimum !== undefined) l.push(`≥${s.minimum}`);
  if (s.maximum !== undefined) l.push(`≤${s.maximum}`);
  if (s.minItems !== undefined) l.push(`≥${s.minItems} items`);
  if (s.maxItems !== undefined) l.push(`≤${s.maxItems} items`);
  if (s.maxProperties !== undefined) l.push(`≤${s.maxProperties} entries`);
  if (s.pattern !== undefined) l.push(`pattern \`${s.pattern}\``);
  return l.join(', ');
};

const fields = (s: Json | undefined): string[] => {
  if (!s?.properties) return [];
  const req = new Set<string>(s.required ?? []);
  return Object.entries(s.properties as Record<string, Json>).map(
    ([k, v]) => `| \`${k}\` | ${typeOf(v)} | ${req.has(k) ? 'yes' : 'no'} | ${[limits(v), v.description].filter(Boolean).join('; ').replace(/\|/g, '\\|')} |`,
  );
};

/** The behaviour of the enqueue door the route table cannot say. */
const WAIT_AND_BACKPRESSURE = [
  '## Waiting for the first attempt',
  '',
  '`POST /webhooks/:config/enqueue?wait=5s` (and `/enqueue/batch`; or the header `Prefer: wait=5`, in seconds as RFC 7240 has it; the query wins when both are given) holds the answer until the first attempt of each webhook the request enqueued has been made, or until the wait runs out. A wait is `5s`, `500ms` or `5` (seconds); anything else is a 400 naming `wait`, with nothing enqueued; a wait longer than `api.sync_max_wait` (10 s) is cut to it.',
  '',
  '- The webhook is durable first: the wait starts once Kafka has acknowledged it, as without a wait. Waiting never changes what is delivered, nor when.',
  '- Every webhook has its first attempt: `200` with `status` `delivered`, `retrying` (a 5xx, 408, 429 or network error; `outcome.next_retry_at` says when the next attempt is due) or `dead_lettered` (a 4xx or another permanent failure; `outcome.dead_reason`), and `outcome: {attempts, status_code, error, next_retry_at, dead_reason}`. A batch answers 200 when every item has its outcome (or is a duplicate), each result with its own `status` and `outcome`.',
  '- The wait runs out first: `202` with `status: "pending"`, as without a wait; the delivery goes on. A webhook held back before any attempt (paused, circuit open, rate limited, slow lane) has no first attempt yet, so its wait runs out. A duplicate `idempotency_key` answers at once.',
  '- `Howk-Wait` says how a wait that was asked for ended: `done`, `expired`, `busy` (not granted, answered at once with 202: `api.sync_max_waiting` requests already wait on this api instance, or `api.sync_max_waiting_per_config` of this config) or `unsupported` (a runtime without waits, the edge). `Preference-Applied: wait=<seconds>` gives the wait granted, after the cut.',
  "- Across processes: the webhook record names the api instance that waits (`awaited_by`, never sent); the worker that makes the first attempt publishes the outcome, once it is durable, on that instance's Redis channel (`first_outcomes:{<instance>}`): one PUBLISH per instance per outcome batch, nothing for webhooks nobody waits for. howk-dev does the same in memory. Pub/sub is at most once: a message lost (Redis briefly away) lets the wait run out (202 pending), and nothing else changes.",
  '- A request learns only the outcomes of the webhooks it enqueued itself, on a config its key may enqueue to; a waiting request counts against `api.max_inflight_requests` for the whole wait.',
  '',
  '## Backpressure at the door',
  '',
  '- `api.max_inflight_requests` (10,000 per api instance; 0: no bound): past it, every route but `/health`, `/ready`, `/health/dependencies` and `/metrics` answers `503` with `{"error": {"code": "overloaded"}}` and `Retry-After: 1`, before authentication and before the body is read: nothing is recorded or enqueued.',
  '- `api.max_outstanding_per_config` (0, off; `api.outstanding_overrides` sets a config\'s own bound, 0 for none): while a config has this many webhooks outstanding (accepted and not yet delivered or dead-lettered: state `pending` or `retrying`, held ones included), its enqueues answer `429` with `{"error": {"code": "too_many_outstanding", "config"}}` and `Retry-After: 1`, nothing enqueued; they are accepted again as deliveries end. The figure comes from the state indexes every status write keeps (on Redis two ZLEXCOUNTs per enqueue, no write of its own), so the bound is soft: requests checked at the same moment may all be admitted, and a batch is admitted whole while the config is below it. When the count cannot be read (Redis away) the enqueue is admitted. `GET /configs/:config/status` shows it; the api instance exports it as the gauge `howk_config_outstanding{config}` and counts refusals in `howk_api_refused_total{reason}`.',
];

export const apiDocsMarkdown = (c: Config): string => {
  const doc = buildOpenApi(c, ROUTES) as Json;
  const out: string[] = [
    '# HTTP API',
    '',
    'Generated from `docs/openapi.json` (itself generated from the route table and its zod schemas in `core/http/`) by `npm run docs:api`; do not edit by hand.',
    'The running server serves its own copy, with its configured limits, at `GET /openapi.json`.',
    '',
    'Every route is declared once, in `core/http/route-table.ts`: the servers mount it, the auth middleware takes its scope and config from it, and this page and the OpenAPI document are generated from it.',
    '',
    'Authentication: `Authorization: Bearer howk_<id>_<secret>` on every route whose scope is not "none" (when `api.auth.enabled`, the default outside `howk-dev`). An `admin` key covers every scope; a key bound to configs reaches only routes about those configs: where each route finds its config is under "Config" below (a route about no single config refuses such a key with 403). See [SECURITY.md](SECURITY.md).',
    '',
    "Runtimes: `howk-api` and `howk-dev` serve every route; the edge Worker (docs/EDGE.md) serves those whose runtimes include `edge`. Each operation of the OpenAPI document says which in `x-howk-runtimes`, and a server's own `/openapi.json` lists only the routes it serves (a route it lacks the dependencies of is not mounted: 404 once the key is accepted).",
    '',
    'Errors are `{"error": {"code", "message", "field"?, "issues"?, "limit"?}}`: 400 invalid input (naming the field), 401 missing or unknown key, 403 scope or config not allowed (`forbidden`) or a state-changing request a browser sent from another site (`cross_origin_refused`: `Sec-Fetch-Site` cross-site or same-site, or an `Origin` not of this server nor in `api.allowed_origins`), 404, 409 the server\'s state forbids it (`auth_disabled`: `POST /keys` while API keys are off), 413 body over a limit, 415 a JSON body not sent as `application/json` (`unsupported_media_type`), 421 a `Host` not in `api.allowed_hosts` (`host_not_allowed`), 429 rate limited (a key over its rate, or at the edge a client over `edge.key_lookup_rate` lookups of uncached keys) or too many outstanding webhooks (`Retry-After`), 431 request headers over a limit, 501 not configured on this server, 503 dependency unavailable (at the edge, `key_check_unavailable`: the key mirror could not be read, so the key was neither accepted nor refused) or the instance over `api.max_inflight_requests` (`Retry-After`).',
    '',
    ...WAIT_AND_BACKPRESSURE,
    '',
    ...IDEMPOTENCY_AND_RAW_BODIES,
    '',
    '## Routes',
    '',
    '| method | path | scope | runtimes | summary |',
    '|---|---|---|---|---|',
  ];
  const details: string[] = [];
  for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
    for (const [method, op] of Object.entries(methods)) {
      const scope = String(op.description)
        .replace(/^Scope: /, '')
        .replace(/\.$/, '');
      const runtimes = (op['x-howk-runtimes'] as string[]).join(', ');
      out.push(`| ${method.toUpperCase()} | \`${path}\` | ${scope} | ${runtimes} | ${op.summary} |`);
      const body = op.requestBody?.content?.['application/json']?.schema as Json | undefined;
      const responses = Object.entries(op.responses as Record<string, Json>).filter(([code]) => code !== 'default');
      details.push(
        '',
        `### ${method.toUpperCase()} ${path}`,
        '',
        `${op.summary}. Scope: ${scope}.${op['x-howk-config'] ? ` Config (for a key bound to configs): ${op['x-howk-config']}.` : ''} Runtimes: ${runtimes}.`,
      );
      const query = ((op.parameters ?? []) as Json[]).filter((p) => p.in === 'query');
      if (query.length) {
        details.push('', 'Query parameters:', '', '| name | type | required | limits / notes |', '|---|---|---|---|');
        for (const q of query)
          details.push(
            `| \`${q.name}\` | ${typeOf(q.schema)} | ${q.required ? 'yes' : 'no'} | ${[limits(q.schema), q.description].filter(Boolean).join('; ').replace(/\|/g, '\\|')} |`,
          );
      }
      if (body) {
        const rows = fields(body);
        details.push('', `Request body (${op.requestBody.required ? 'required' : 'optional'}):`, '');
        if (rows.length) details.push('| field | type | required | limits / notes |', '|---|---|---|---|', ...rows);
        const items = body.properties?.webhooks?.items;
        if (items) details.push('', 'Each item of `webhooks`:', '', '| field | type | required | limits / notes |', '|---|---|---|---|', ...fields(items));
      }
      details.push('', `Responses: ${responses.map(([code, r]) => `\`${code}\` ${r.description}`).join(', ')}; errors as above.`);
    }
  }
  return [...out, '', '## Operations', ...details, ''].join('\n');
};
