import { Hono } from 'hono';
import { NotConfiguredError } from '../../errors/errors';
import type { ApiDeps } from '../deps';

/** GET /metrics: Prometheus text (read scope when api.auth.enabled, like every unlisted GET). */
export const metricsRoutes = (d: ApiDeps) => {
  const app = new Hono();
  app.get('/metrics', async (c) => {
    if (!d.metrics) throw new NotConfiguredError('metrics are not collected by this server');
    const { contentType, body } = await d.metrics();
    return c.body(body, 200, { 'content-type': contentType });
  });
  return app;
};
