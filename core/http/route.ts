import type { Context, Next } from 'hono';
import { z } from 'zod';
import type { Config } from '../config/schema';
import type { Scope } from '../security/api-keys';
import type { ApiDeps } from './deps';

// One declaration per HTTP route (core/http/route-table.ts lists them): the app mounts its
// handler, the auth middleware takes its scope and config from it, and the OpenAPI document
// (served at /openapi.json, docs/openapi.json, docs/API.md) is generated from it.

export type Json = Record<string, unknown>;
export type Method = 'get' | 'post' | 'put' | 'delete';

/**
 * Optional dependencies of ApiDeps a route can need. A runtime that lacks one does not mount
 * the route, and its /openapi.json leaves it out (core/http/runtimes.ts).
 */
export type Capability = 'listing' | 'redrive' | 'guards' | 'keyAdmin' | 'configSecrets' | 'scripts' | 'transformers' | 'metrics' | 'outstanding' | 'events' | 'overview' | 'apps';

/**
 * Where the config of a request is, for a key bound to configs: a path parameter, a query
 * parameter, or the owner of the resource a path parameter names (looked up; another
 * config's resource answers 404, as if absent). A route without one is about no single
 * config: a bound key gets 403.
 */
export type ConfigFrom =
  | { from: 'param'; name: string }
  | { from: 'query'; name: string }
  | { from: 'owner'; name: string; owner: (d: ApiDeps, id: string) => Promise<string | null>; notFound: (id: string) => string }
  /** The caller's own key (GET /keys/me): no config to check. */
  | { from: 'self' }
  /**
   * The handler finds the config itself from the query parameter `name` or, without it, the
   * key's one config, and answers 404 for one the key does not reach (/hooks/:name).
   */
  | { from: 'handler'; name: string };

/** A response: a zod schema (or JSON Schema where zod cannot say it), or none. */
export type ResponseDoc = { description: string; schema?: z.ZodType | Json; headers?: Json; /** application/json unless said. */ contentType?: string };

/** A middleware or the final handler of a route. */
export type RouteHandler = (c: Context<any>, next: Next) => Response | Promise<Response | void>;

/** What a route's handler gets besides its deps. */
export type MountContext = { /** The routes this app mounts (what its /openapi.json describes). */ routes: readonly Route[] };

export type Route = {
  method: Method;
  /** Hono syntax: `/webhooks/:id/status`. */
  path: string;
  tag: string;
  summary: string;
  access: 'open' | Scope;
  config?: ConfigFrom;
  needs?: readonly Capability[];
  request?: {
    params?: z.ZodObject;
    /** Of the running config where a limit comes from it. */
    query?: (c: Config) => z.ZodObject;
    /** A zod schema (input side), or JSON Schema where the zod schema's refinements need spelling out. */
    body?: (c: Config) => z.ZodType | Json;
    bodyRequired?: boolean;
    /**
     * json (the default of a route with a body): the body must be sent as application/json
     * (415 otherwise, core/http/middleware/media.ts); any: the handler takes the bytes as they
     * come (/incoming: a provider's raw body; a script PUT: raw Lua).
     */
    media?: 'json' | 'any';
  };
  responses: Record<string, ResponseDoc>;
  /** Built once per app: middlewares then the handler. */
  handler: (d: ApiDeps, ctx: MountContext) => RouteHandler[];
};

/** `GET /webhooks/:id/status`: how routes are named in overrides, tests and errors. */
export const routeKey = (r: Pick<Route, 'method' | 'path'>): string => `${r.method.toUpperCase()} ${r.path}`;

/** `/webhooks/{id}/status`. */
export const openApiPath = (path: string): string => path.replace(/:(\w+)/g, '{$1}');

/** Whether a route reads a JSON body only: its requests must say application/json. */
export const readsJson = (r: Route): boolean => r.request?.body !== undefined && r.request.media !== 'any';

export const isZod = (s: unknown): s is z.ZodType => s instanceof z.ZodType;

const HAS: Record<Capability, (d: ApiDeps) => boolean> = {
  listing: (d) => d.listing !== undefined,
  redrive: (d) => d.redrive !== undefined,
  guards: (d) => d.guards !== undefined && d.producer !== undefined,
  keyAdmin: (d) => d.keyAdmin !== undefined,
  configSecrets: (d) => d.configSecrets !== undefined,
  scripts: (d) => d.scripts !== undefined,
  transformers: (d) => d.transformers !== undefined,
  metrics: (d) => d.metrics !== undefined,
  outstanding: (d) => d.outstanding !== undefined,
  events: (d) => d.changes !== undefined,
  overview: (d) => d.overview !== undefined,
  apps: (d) => d.apps !== undefined,
};

export const hasCapabilities = (d: ApiDeps, needs: readonly Capability[] = []): boolean => needs.every((n) => HAS[n](d));

/** JSON Schema (draft 2020-12) of a zod schema, as OpenAPI 3.1 takes it. */
export const toJsonSchema = (s: z.ZodType, io: 'input' | 'output' = 'output'): Json => {
  const { $schema: _s, ...rest } = z.toJSONSchema(s, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
  return rest;
};
