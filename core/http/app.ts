import { Hono } from 'hono';
import type { ApiDeps } from './deps';
import { errorResponse } from './errors';
import { enqueueRoutes } from './routes/enqueue';
import { healthRoutes } from './routes/health';
import { statusRoutes } from './routes/status';

export type { ApiDeps, DependencyCheck } from './deps';

/** Routes shared by howk-api and howk-dev (and, for enqueue, the edge). One file per concept under routes/. */
export const createApiApp = (d: ApiDeps) => {
  const app = new Hono();
  app.onError((e, c) => errorResponse(c, e, d.log));
  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` } }, 404));
  app.route('/', healthRoutes(d));
  app.route('/', enqueueRoutes(d));
  app.route('/', statusRoutes(d));
  return app;
};
