import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { z } from 'zod';
import { endpointHash } from '../../domain/ids';
import { WebhookState, WebhookStatusSchema, type WebhookStatus } from '../../domain/status';
import { parseWebhookListQuery } from '../../reconcile/listing';
import { CONFIG_ID } from '../../domain/config-id';
import type { Route } from '../route';
import { statusRow } from './webhooks';

// GET /webhooks/events: the listing's changes as server-sent events (docs/CONSOLE.md, Live
// updates). Every subscriber shares the process's one poll (core/live/change-feed.ts).

const EventsQuery = (c: { api: { max_endpoint_length: number } }) =>
  z.object({
    config_id: z.string().regex(CONFIG_ID),
    state: WebhookState.optional().describe('Only changes that leave a webhook in this state'),
    endpoint: z.string().min(1).max(c.api.max_endpoint_length).optional().describe('Only webhooks to this endpoint URL'),
  });

/** Waits for rows or the heartbeat, writes them; returns when the client or the feed is gone. */
const pump = async (stream: SSEStreamingApi, queue: WebhookStatus[], heartbeatMs: number, wait: (ms: number) => Promise<void>, ended: () => boolean) => {
  await stream.write(': connected\nretry: 3000\n\n');
  while (!ended() && !stream.aborted) {
    if (!queue.length) await wait(heartbeatMs);
    if (ended() || stream.aborted) break;
    if (!queue.length) {
      await stream.write(': heartbeat\n\n');
      continue;
    }
    for (const s of queue.splice(0)) await stream.writeSSE({ event: 'webhook', id: s.updated_at_ns, data: JSON.stringify(statusRow(s)) });
  }
};

export const eventRoutes: Route[] = [
  {
    method: 'get',
    path: '/webhooks/events',
    tag: 'webhooks',
    summary: 'Server-sent events: each webhook of a config that is enqueued or changes state (`event: webhook`, data: a listing row)',
    access: 'read',
    config: { from: 'query', name: 'config_id' },
    needs: ['events'],
    request: { query: EventsQuery },
    responses: {
      '200': {
        description: 'text/event-stream: `event: webhook` with a listing row as data, `: heartbeat` comments while nothing changes',
        contentType: 'text/event-stream',
        schema: WebhookStatusSchema.omit({ updated_at_ns: true }),
      },
      '503': { description: 'too many open streams on this process (events.max_subscribers)', schema: { $ref: '#/components/schemas/Error' } },
    },
    handler: (d) => [
      async (c) => {
        const feed = d.changes!;
        const q = parseWebhookListQuery(c.req.query());
        const hash = q.endpoint ? await endpointHash(q.endpoint) : null;
        const match = (s: WebhookStatus) => (!q.state || s.state === q.state) && (!hash || s.endpoint_hash === hash);
        const queue: WebhookStatus[] = [];
        let wake: (() => void) | null = null;
        let over = false;
        const notify = () => wake?.();
        const unsubscribe = feed.subscribe(q.configId, {
          rows: (rows) => {
            queue.push(...rows.filter(match));
            if (queue.length) notify();
          },
          end: () => {
            over = true;
            notify();
          },
        });
        if (!unsubscribe) return c.json({ error: { code: 'too_many_streams', message: 'this server has as many event streams open as it allows; try again later' } }, 503);
        const wait = (ms: number) =>
          new Promise<void>((resolve) => {
            const t = setTimeout(done, ms);
            function done() {
              clearTimeout(t);
              wake = null;
              resolve();
            }
            wake = done;
          });
        return streamSSE(c, async (stream) => {
          stream.onAbort(() => {
            unsubscribe();
            notify();
          });
          try {
            await pump(stream, queue, feed.heartbeatMs, wait, () => over);
          } finally {
            unsubscribe();
          }
        });
      },
    ],
  },
];
