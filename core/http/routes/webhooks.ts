import type { Context } from 'hono';
import { z } from 'zod';
import type { Config } from '../../config/schema';
import { endpointHash } from '../../domain/ids';
import { WebhookState, WebhookStatusSchema, type WebhookStatus } from '../../domain/status';
import { ID_CURSOR, LIST_MAX_LIMIT, parseWebhookListQuery } from '../../reconcile/listing';
import { RedriveConflictError } from '../../reconcile/redrive';
import { statusView } from '../../pipeline/redact';
import { CONFIG_ID } from '../../domain/config-id';
import { enqueueItemSchema } from '../../domain/enqueue';
import { readJsonBody } from '../json-body';
import { withEnqueueFields } from './enqueue';
import { IdParam } from '../params';
import type { ResponseDoc, Route } from '../route';
import { WEBHOOK_OWNER } from './status';

// GET /webhooks (delivery listing) and POST /webhooks/:id/retry (docs/RELIABILITY.md, Listings;
// Retry and replay).

/** A listing row: the status as GET /webhooks/:id/status shows it, without the history. */
export const statusRow = (s: WebhookStatus) => {
  const { updated_at_ns: _ns, ...row } = s as WebhookStatus & { history?: unknown };
  delete (row as { history?: unknown }).history;
  return statusView(row);
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

export const RedriveResultSchema = z.object({
  webhook_id: z.string(),
  status: z.enum(['pending', 'duplicate']),
  attempt: z.number().int().optional(),
  replay_of: z.string().optional(),
  dropped_headers: z.array(z.string()).describe('Headers the dead letter kept only redacted: not sent again unless given'),
});
export const CONFLICT: ResponseDoc = {
  description: 'conflict: not at an end, no body left, or already under way (the error code says which)',
  schema: { $ref: '#/components/schemas/Error' },
};
export const LIMIT = z.number().int().min(1).max(LIST_MAX_LIMIT).optional().describe('Page size (default 50)');
/**
 * The body of every cursor listing (GET /webhooks, /deadletter, /scripts, /hooks/:name/deliveries):
 * the type the console and the CLI read it with, so a change here fails their type checks too.
 * pageOf is its OpenAPI schema; the store's Page (core/ports/recovery.ts) is what it is built from.
 */
export type ListBody<T> = { items: T[]; count: number; next_cursor: string | null };
export const listBody = <T>(items: T[], next: string | null): ListBody<T> => ({ items, count: items.length, next_cursor: next });
export const pageOf = (row: z.ZodType) =>
  z.object({ items: z.array(row), count: z.number().int(), next_cursor: z.string().nullable().describe('The cursor of the next page; null at the end') });

const retryBody = (c: Config) => {
  const item = enqueueItemSchema(c.api).shape;
  return z.object({ headers: item.headers, signing_secret: item.signing_secret, attempts: z.number().int().min(1).max(1000).optional() }).strict();
};

// An endpoint longer than api.max_endpoint_length was never enqueued; the bound also keeps the
// URL under the server's header size limit (a longer one is answered by Node's parser, not JSON).
const WebhookListQuery = (c: Config) =>
  z.object({
    config_id: z.string().regex(CONFIG_ID),
    state: WebhookState.optional(),
    endpoint: z.string().min(1).max(c.api.max_endpoint_length).optional().describe('Only webhooks to this endpoint URL'),
    cursor: z.string().regex(ID_CURSOR).optional().describe('next_cursor of the previous page'),
    limit: LIMIT,
  });

export const webhookRoutes: Route[] = [
  {
    method: 'get',
    path: '/webhooks',
    tag: 'webhooks',
    summary: 'Webhooks of a config, newest first, by state and endpoint (one page)',
    access: 'read',
    config: { from: 'query', name: 'config_id' },
    needs: ['listing'],
    request: { query: WebhookListQuery },
    responses: { '200': { description: 'page', schema: pageOf(WebhookStatusSchema.omit({ updated_at_ns: true })) } },
    handler: (d) => [
      async (c) => {
        const q = parseWebhookListQuery(c.req.query());
        const page = await d.listing!.listWebhooks({
          configId: q.configId,
          ...(q.state ? { state: q.state } : {}),
          ...(q.endpoint ? { endpointHash: await endpointHash(q.endpoint) } : {}),
          ...(q.cursor ? { cursor: q.cursor } : {}),
          limit: q.limit,
        });
        return c.json(listBody(page.items.map(statusRow), page.next));
      },
    ],
  },
  {
    method: 'post',
    path: '/webhooks/:id/retry',
    tag: 'webhooks',
    summary: 'A new attempt of the same webhook (same id, attempt count going on) from its dead letter',
    access: 'admin',
    config: WEBHOOK_OWNER,
    needs: ['redrive'],
    request: { params: IdParam, body: (c) => withEnqueueFields(c, retryBody(c)) },
    responses: { '202': { description: 'on its way', schema: RedriveResultSchema, headers: { Location: { schema: { type: 'string' } } } }, '409': CONFLICT },
    handler: (d) => {
      const body = retryBody(d.config);
      return [
        (c) =>
          conflictAware(c, async () => {
            const o = await readJsonBody(c, body, { optional: true });
            const id = c.req.param('id')!;
            const r = await d.redrive!.retry(id, o);
            c.header('Location', `/webhooks/${encodeURIComponent(id)}/status`);
            return c.json(r, 202);
          }),
      ];
    },
  },
];
