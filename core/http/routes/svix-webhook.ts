import { z } from 'zod';
import { NotFoundError } from '../../errors/errors';
import { IdParam } from '../params';
import type { Route } from '../route';
import { WEBHOOK_OWNER } from './status';

// The way back from a webhook to the Svix message that made it and the registered endpoint it
// went to (the Inspector's links). The message's record names the webhook of each endpoint;
// only the messages an application keeps (svix.messages_kept_per_app) are known, indexed by
// webhook id (core/apps/table.ts) so that a look-up costs the same whatever the fan-out.

const MessageOfWebhook = z.object({
  app_id: z.string(),
  app_uid: z.string().nullable(),
  msg_id: z.string(),
  event_type: z.string(),
  endpoint_id: z.string(),
  endpoint_uid: z.string().nullable().describe('null too when the endpoint has been deleted since'),
  deliveries: z
    .array(z.object({ endpoint_id: z.string(), webhook_id: z.string(), manual: z.boolean().optional() }))
    .describe('every webhook the message made, one per endpoint, and its resends (manual)'),
});

export const svixWebhookRoutes: Route[] = [
  {
    method: 'get',
    path: '/webhooks/:id/message',
    tag: 'svix',
    needs: ['apps'],
    summary: 'The Svix message and registered endpoint a webhook was made for',
    access: 'read',
    config: WEBHOOK_OWNER,
    request: { params: IdParam },
    responses: {
      '200': { description: 'the message and endpoint', schema: MessageOfWebhook },
      '404': { description: 'no such webhook (or one the key does not reach), or none of a message its application still keeps' },
    },
    handler: (d) => [
      async (c) => {
        const id = c.req.param('id')!;
        const s = await d.hot.getStatus(id);
        const table = d.apps!.store.table;
        const m = s ? table.messageOfWebhook(s.config_id, id) : undefined;
        const hit = m?.deliveries.find((x) => x.webhook_id === id);
        if (m && hit) {
          const app = table.app(m.app_id);
          return c.json({
            app_id: m.app_id,
            app_uid: app?.uid ?? null,
            msg_id: m.id,
            event_type: m.event_type,
            endpoint_id: hit.endpoint_id,
            endpoint_uid: table.endpoint(m.app_id, hit.endpoint_id)?.uid ?? null,
            deliveries: m.deliveries,
          });
        }
        throw new NotFoundError(`a kept Svix message of webhook ${id}`);
      },
    ],
  },
];
