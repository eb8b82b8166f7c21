import { z } from 'zod';
import { checkConfigId } from '../../domain/config-id';
import { ConfigParam } from '../params';
import type { Route } from '../route';
import { outstandingBound } from './enqueue-wait';

const ConfigStatus = z.object({
  config_id: z.string(),
  outstanding: z.number().int().describe('Webhooks accepted and not yet terminal (pending or retrying, held ones included)'),
  max_outstanding: z
    .number()
    .int()
    .nullable()
    .describe("The config's bound (api.outstanding_overrides, else api.max_outstanding_per_config): past it, enqueues answer 429; null when there is no bound"),
});

/** What a config has in the system right now. */
export const configRoutes: Route[] = [
  {
    method: 'get',
    path: '/configs/:config/status',
    tag: 'endpoints',
    summary: 'Outstanding webhooks of a config and its bound',
    access: 'read',
    needs: ['outstanding'],
    config: { from: 'param', name: 'config' },
    request: { params: ConfigParam },
    responses: { '200': { description: 'status', schema: ConfigStatus } },
    handler: (d) => [
      async (c) => {
        const id = c.req.param('config')!;
        checkConfigId(id);
        const outstanding = await d.outstanding!.countOutstanding(id);
        d.door?.outstanding(id, outstanding);
        const bound = outstandingBound(d.config.api, id);
        return c.json({ config_id: id, outstanding, max_outstanding: bound > 0 ? bound : null });
      },
    ],
  },
];
