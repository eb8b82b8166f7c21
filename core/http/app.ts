import { Hono } from 'hono';
import type { NodeApiDeps } from './deps';
import { errorResponse } from './errors';
import { authMiddleware } from './middleware/auth';
import { headerLimits } from './middleware/limits';
import { enqueueRoutes } from './routes/enqueue';
import { healthRoutes } from './routes/health';
import { incomingRoutes } from './routes/incoming';
import { endpointRoutes } from './routes/endpoints';
import { keyRoutes } from './routes/keys';
import { metricsRoutes } from './routes/metrics';
import { openApiRoutes } from './routes/openapi';
import { scriptRoutes } from './routes/scripts';
import { secretRoutes } from './routes/secrets';
import { statusRoutes } from './routes/status';
import { webhookRoutes } from './routes/webhooks';
import { deadLetterRoutes } from './routes/deadletter';

export type { ApiDeps, DependencyCheck, NodeApiDeps } from './deps';

/** Routes shared by howk-api and howk-dev (and, for enqueue, the edge). One file per concept under routes/. */
export const createApiApp = (d: NodeApiDeps) => {
  const app = new Hono();
  app.onError((e, c) => errorResponse(c, e, d.log));
  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` } }, 404));
  // Header limits, then API keys (core/security/route-access.ts maps routes to scopes).
  app.use('*', headerLimits(d), authMiddleware(d));
  app.route('/', healthRoutes(d));
  app.route('/', openApiRoutes(d));
  app.route('/', enqueueRoutes(d));
  app.route('/', statusRoutes(d));
  app.route('/', webhookRoutes(d));
  app.route('/', deadLetterRoutes(d));
  app.route('/', keyRoutes(d));
  app.route('/', secretRoutes(d));
  app.route('/', endpointRoutes(d));
  app.route('/', incomingRoutes(d));
  app.route('/', scriptRoutes(d));
  app.route('/', metricsRoutes(d));
  return app;
};
