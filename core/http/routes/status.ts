import { z } from 'zod';
import { AttemptRecord, WebhookStatusSchema } from '../../domain/status';
import { NotFoundError } from '../../errors/errors';
import { statusView } from '../../pipeline/redact';
import type { ApiDeps } from '../deps';
import { IdParam } from '../params';
import type { ConfigFrom, Route } from '../route';

export const StatusView = WebhookStatusSchema.omit({ updated_at_ns: true }).extend({ history: z.array(AttemptRecord) });
const StatsWindow = z.object({
  enqueued: z.number(),
  delivered: z.number(),
  failed: z.number(),
  exhausted: z.number(),
  dead_lettered: z.number(),
  retried: z.number(),
  unique_endpoints: z.number(),
});

/** The config of a dead-letter record, or null when it names none. */
export const deadLetterConfig = (record: string | null): string | null => {
  if (record === null) return null;
  try {
    const v = JSON.parse(record) as { config_id?: unknown };
    return typeof v.config_id === 'string' ? v.config_id : null;
  } catch {
    return null;
  }
};

/** The config of a webhook: its status's, else its dead letter's (a dead letter outlives the status). */
const webhookOwner = async (d: ApiDeps, id: string): Promise<string | null> => {
  const s = await d.hot.getStatus(id);
  if (s) return s.config_id;
  return d.listing ? deadLetterConfig(await d.listing.getDeadLetter(id)) : null;
};

/** A webhook named by `:id`: a key bound to other configs is told it does not exist. */
export const WEBHOOK_OWNER: ConfigFrom = { from: 'owner', name: 'id', owner: webhookOwner, notFound: (id) => `webhook ${id}` };

export const statusRoutes: Route[] = [
  {
    method: 'get',
    path: '/webhooks/:id/status',
    tag: 'webhooks',
    summary: 'State, attempts and the last 20 attempts of a webhook',
    access: 'read',
    config: WEBHOOK_OWNER,
    request: { params: IdParam },
    responses: { '200': { description: 'status', schema: StatusView } },
    handler: (d) => [
      async (c) => {
        const s = await d.hot.getStatus(c.req.param('id')!);
        if (!s) throw new NotFoundError(`webhook ${c.req.param('id')}`);
        const { updated_at_ns: _ns, ...view } = s;
        return c.json(statusView(view));
      },
    ],
  },
  {
    method: 'get',
    path: '/stats',
    tag: 'webhooks',
    summary: 'Counters of the last hour and the last 24 hours',
    access: 'read',
    responses: { '200': { description: 'stats', schema: z.object({ last_1h: StatsWindow, last_24h: StatsWindow }) } },
    handler: (d) => [
      async (c) => {
        const now = d.clock.now();
        const [h1, h24] = await Promise.all([d.hot.stats(now, 1), d.hot.stats(now, 24)]);
        return c.json({ last_1h: h1, last_24h: h24 });
      },
    ],
  },
];
