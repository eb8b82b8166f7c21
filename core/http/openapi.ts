import { z } from 'zod';
import type { Config } from '../config/schema';
import { isZod, openApiPath, readsJson, toJsonSchema, type ConfigFrom, type Json, type ResponseDoc, type Route } from './route';
import { runtimesOf } from './runtimes';

// OpenAPI 3.1 from the route table (core/http/route-table.ts): the same zod schemas that
// validate requests (z.toJSONSchema), the scopes the auth middleware enforces. The limits in
// it are the running server's (`/openapi.json`, only the routes that server mounts);
// docs/openapi.json is every route, built from the defaults.

// Loose: the Svix API's routes (/api/v1) add its own `code` and `detail` beside `error` (core/http/svix-errors.ts).
const ErrorBody = z.looseObject({
  error: z.looseObject({
    code: z.string(),
    message: z.string(),
    field: z.string().nullable().optional(),
    limit: z.number().optional(),
    issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  }),
});

const errors = {
  default: {
    description:
      'Error: 400 invalid input (names the field), 401 no or bad key, 403 scope or config not allowed, or (cross_origin_refused) a state-changing request a browser sent from another site, 404, 413/431 over a limit, 421 a Host not in api.allowed_hosts (host_not_allowed), 429 rate limited (Retry-After), 501 not configured, 503 dependency unavailable (Retry-After)',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  },
};

/** Of every route that reads a JSON body (core/http/middleware/media.ts). */
const unsupportedMedia = {
  '415': {
    description: 'the body was not sent as application/json (unsupported_media_type); nothing was done',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  },
};

const response = (r: ResponseDoc): Json => ({
  description: r.description,
  ...(r.headers ? { headers: r.headers } : {}),
  ...(r.schema ? { content: { [r.contentType ?? 'application/json']: { schema: isZod(r.schema) ? toJsonSchema(r.schema) : r.schema } } } : {}),
});

/** OpenAPI parameters of a zod object: its properties, required unless optional, their description lifted. */
const parameters = (where: 'path' | 'query', s: z.ZodObject | undefined): Json[] => {
  if (!s) return [];
  const j = toJsonSchema(s, 'input') as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(j.properties ?? {}).map(([name, { description, ...schema }]) => ({
    name,
    in: where,
    required: where === 'path' || (j.required ?? []).includes(name),
    ...(description ? { description } : {}),
    schema,
  }));
};

/** Scope text of a route, as docs show it. */
export const scopeText = (r: Route): string => (r.access === 'open' ? 'none (open)' : r.access);

/** Where a config-bound key's config is, as docs show it. */
export const configText = (f: ConfigFrom | undefined): string =>
  f === undefined
    ? 'none (a key bound to configs is refused)'
    : f.from === 'param'
      ? `path parameter ${f.name}`
      : f.from === 'query'
        ? `query parameter ${f.name}`
        : f.from === 'self'
          ? 'any (the key asks about itself)'
          : f.from === 'handler'
            ? `query parameter ${f.name}, or the key's one config (another config's answers 404)`
            : `the config of what path parameter ${f.name} names (another config's answers 404)`;

const operationId = (r: Route) =>
  `${r.method}${openApiPath(r.path)
    .replace(/[{}]/g, '')
    .replace(/[/.](\w)/g, (_m, ch: string) => ch.toUpperCase())}`;

export const buildOpenApi = (c: Config, routes: readonly Route[]): Json => {
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of routes) {
    const scope = scopeText(r);
    const params = [...parameters('path', r.request?.params), ...parameters('query', r.request?.query?.(c))];
    const body = r.request?.body?.(c);
    (paths[openApiPath(r.path)] ??= {})[r.method] = {
      tags: [r.tag],
      summary: r.summary,
      description: `Scope: ${scope}.`,
      operationId: operationId(r),
      ...(r.access === 'open' ? { security: [] } : {}),
      ...(params.length ? { parameters: params } : {}),
      ...(body
        ? { requestBody: { required: r.request?.bodyRequired ?? false, content: { 'application/json': { schema: isZod(body) ? toJsonSchema(body, 'input') : body } } } }
        : {}),
      responses: { ...Object.fromEntries(Object.entries(r.responses).map(([code, doc]) => [code, response(doc)])), ...(readsJson(r) ? unsupportedMedia : {}), ...errors },
      ...(r.access === 'open' ? {} : { 'x-howk-config': configText(r.config) }),
      'x-howk-runtimes': runtimesOf(r),
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Howk API',
      version: '0.1.0',
      description:
        "Webhook delivery: enqueue, status, listings, retry and replay, API keys and signing secrets. Every route but health needs `Authorization: Bearer howk_...` with the scope named in its description (when api.auth.enabled). `x-howk-runtimes` names the runtimes that serve an operation; a server's own /openapi.json lists only the operations it serves.",
    },
    servers: [{ url: '/' }],
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'howk_<id>_<secret> API key' } },
      schemas: { Error: toJsonSchema(ErrorBody) },
    },
  };
};
