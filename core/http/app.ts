import { Hono, type MiddlewareHandler } from 'hono';
import { accessMatcher } from './access';
import type { ApiDeps } from './deps';
import { errorResponse } from './errors';
import { SVIX_PREFIX, svixErrorResponse } from './svix-errors';
import { authMiddleware } from './middleware/auth';
import { apiAnswerHeaders, crossOriginGuard, hostAllowList } from './middleware/browsers';
import { inflightLimit } from './middleware/inflight';
import { headerLimits } from './middleware/limits';
import { requireJson } from './middleware/media';
import { hasCapabilities, readsJson, routeKey, type Route, type RouteHandler } from './route';
import { ROUTES } from './route-table';
import { countEnqueues, countsEnqueues } from './middleware/enqueue-metrics';

export type { ApiDeps, DependencyCheck } from './deps';

export type AppOptions = {
  /** A runtime's own handler of a declared route (key `POST /incoming/:name`); mounted whatever the route needs. */
  implementations?: Record<string, (d: ApiDeps) => RouteHandler[]>;
};

/** The routes an app over these deps mounts: those whose capabilities it has, and those it implements itself. */
export const mountedRoutes = (d: ApiDeps, o: AppOptions = {}): Route[] => {
  const own = o.implementations ?? {};
  for (const k of Object.keys(own)) if (!ROUTES.some((r) => routeKey(r) === k)) throw new Error(`${k} is not a declared route (core/http/route-table.ts)`);
  return ROUTES.filter((r) => own[routeKey(r)] !== undefined || hasCapabilities(d, r.needs));
};

/** The HTTP app of howk-api, howk-dev and the edge, from the one route table (core/http/route-table.ts). */
export const createApiApp = (d: ApiDeps, o: AppOptions = {}) => {
  const app = new Hono();
  app.onError((e, c) => (c.req.path.startsWith(SVIX_PREFIX) ? svixErrorResponse(c, e, d.log) : errorResponse(c, e, d.log)));
  app.notFound((c) => {
    const error = { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` };
    // The Svix API's clients read `code` and `detail` (core/http/svix-errors.ts).
    return c.json(c.req.path.startsWith(SVIX_PREFIX) ? { code: error.code, detail: error.message, error } : { error }, 404);
  });
  const routes = mountedRoutes(d, o);
  // Headers of every answer; the Host and a browser's origin, whatever the route; the in-flight
  // bound, header limits, then API keys: scopes and configs come from the declared routes, mounted here or not.
  const { allowed_hosts, allowed_origins } = d.config.api;
  app.use('*', apiAnswerHeaders, hostAllowList(allowed_hosts), crossOriginGuard(allowed_origins), inflightLimit(d), headerLimits(d), authMiddleware(d, accessMatcher(ROUTES)));
  for (const r of routes) {
    const own = o.implementations?.[routeKey(r)];
    const handlers = own ? own(d) : r.handler(d, { routes });
    const counted = d.events && countsEnqueues(r) ? [countEnqueues(d.events)] : [];
    const media = readsJson(r) ? [requireJson(r.request?.bodyRequired ?? false)] : [];
    app.on(r.method.toUpperCase(), r.path, ...([...counted, ...media, ...handlers] as [MiddlewareHandler]));
  }
  return app;
};
