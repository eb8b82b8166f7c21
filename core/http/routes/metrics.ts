import type { Route } from '../route';

/** GET /metrics: Prometheus text of this process (docs/OPERATIONS.md, Metrics). */
export const metricsRoutes: Route[] = [
  {
    method: 'get',
    path: '/metrics',
    tag: 'health',
    summary: 'Prometheus metrics of this api process: enqueue counters, delivery stage and process metrics (docs/OPERATIONS.md, Metrics)',
    access: 'read',
    needs: ['metrics'],
    responses: { '200': { description: 'Prometheus text exposition format 0.0.4', schema: { type: 'string' }, contentType: 'text/plain' } },
    handler: (d) => [
      async (c) => {
        const { contentType, body } = await d.metrics!();
        return c.body(body, 200, { 'content-type': contentType });
      },
    ],
  },
];
