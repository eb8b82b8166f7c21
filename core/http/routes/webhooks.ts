import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { endpointHash } from '../../domain/ids';
import type { WebhookStatus } from '../../domain/status';
import { NotConfiguredError } from '../../errors/errors';
import { parseWebhookListQuery } from '../../reconcile/listing';
import { RedriveConflictError, type Redriver } from '../../reconcile/redrive';
import { statusView } from '../../pipeline/redact';
import type { ApiDeps } from '../deps';
import type { WebhookListing } from '../../ports/hot-state';
import { enqueueItemSchema } from '../../domain/enqueue';
import { readJsonBody } from '../json-body';

// GET /webhooks (delivery listing) and POST /webhooks/:id/retry (docs/RELIABILITY.md, Listings;
// Retry and replay).

/** A listing row: the status as GET /webhooks/:id/status shows it, without the history. */
export const statusRow = (s: WebhookStatus) => {
  const { updated_at_ns: _ns, ...row } = s as WebhookStatus & { history?: unknown };
  delete (row as { history?: unknown }).history;
  return statusView(row);
};

export const redriverOf = (d: ApiDeps): Redriver => {
  if (!d.redrive) throw new NotConfiguredError('retry and replay are not available on this server');
  return d.redrive;
};

/** A RedriveConflictError is a 409; everything else goes to the app's error handler. */
export const conflictAware = async (c: Context, run: () => Promise<Response>): Promise<Response> => {
  try {
    return await run();
  } catch (e) {
    if (e instanceof RedriveConflictError) return c.json({ error: { code: e.code, message: e.message } }, 409);
    throw e;
  }
};

export const webhookRoutes = (d: ApiDeps & { hot: WebhookListing }) => {
  const app = new Hono();
  const item = enqueueItemSchema(d.config.api).shape;
  const retryBody = z.object({ headers: item.headers, signing_secret: item.signing_secret, attempts: z.number().int().min(1).max(1000).optional() }).strict();

  app.get('/webhooks', async (c) => {
    const q = parseWebhookListQuery(c.req.query());
    const page = await d.hot.listWebhooks({
      configId: q.configId,
      ...(q.state ? { state: q.state } : {}),
      ...(q.endpoint ? { endpointHash: await endpointHash(q.endpoint) } : {}),
      ...(q.cursor ? { cursor: q.cursor } : {}),
      limit: q.limit,
    });
    return c.json({ items: page.items.map(statusRow), count: page.items.length, next_cursor: page.next });
  });

  app.post('/webhooks/:id/retry', (c) =>
    conflictAware(c, async () => {
      const redrive = redriverOf(d);
      const body = await readJsonBody(c, retryBody, { optional: true });
      const id = c.req.param('id');
      const r = await redrive.retry(id, body);
      c.header('Location', `/webhooks/${encodeURIComponent(id)}/status`);
      return c.json(r, 202);
    }),
  );
  return app;
};
