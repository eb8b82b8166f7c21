import { buildOpenApi } from '../openapi';
import type { Route } from '../route';

/** The running server's OpenAPI document: its own limits, and only the routes it mounts. Open: it holds no secret. */
export const openApiRoutes: Route[] = [
  {
    method: 'get',
    path: '/openapi.json',
    tag: 'health',
    summary: 'This document',
    access: 'open',
    responses: { '200': { description: 'OpenAPI 3.1', schema: { type: 'object' } } },
    handler: (d, { routes }) => {
      const doc = buildOpenApi(d.config, routes);
      return [(c) => c.json(doc)];
    },
  },
];
