import { Hono } from 'hono';
import type { ApiDeps } from '../deps';
import { buildOpenApi } from '../openapi';

/** The running server's OpenAPI document (its own limits). Open: it holds no secret. */
export const openApiRoutes = (d: ApiDeps) => {
  const app = new Hono();
  const doc = buildOpenApi(d.config);
  app.get('/openapi.json', (c) => c.json(doc));
  return app;
};
