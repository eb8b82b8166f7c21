import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { z } from 'zod';
import { endpointHash } from '../../domain/ids';
import { WebhookState, WebhookStatusSchema, type WebhookStatus } from '../../domain/status';
import { parseWebhookListQuery } from '../../reconcile/listing';
import { CONFIG_ID } from '../../domain/config-id';
import { RateLimitedError } from '../../errors/errors';
import type { ChangeFeed } from '../../live/change-feed';
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

/** Rows queued for one stream past which it is ended (a client that does not keep up reloads). */
const MAX_QUEUED = 1000;

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

type Pump = { stream: SSEStreamingApi; queue: WebhookStatus[]; feed: ChangeFeed; wait: (ms: number) => Promise<void>; ended: () => boolean };

/**
 * Waits for rows or the heartbeat, writes them; returns when the client, the feed or the
 * stream's lifetime is gone. A write the client does not take within a heartbeat aborts the
 * stream: a response nobody reads (dropped by the server, a stalled client) cannot hold its slot.
 */
const pump = async ({ stream, queue, feed, wait, ended }: Pump) => {
  const put = async (text: string | { event: string; id: string; data: string }) => {
    const stall = setTimeout(() => stream.abort(), Math.max(feed.heartbeatMs, 1000));
    try {
      await (typeof text === 'string' ? stream.write(text) : stream.writeSSE(text));
    } finally {
      clearTimeout(stall);
    }
  };
  await put(': connected\nretry: 3000\n\n');
  while (!ended() && !stream.aborted) {
    if (!queue.length) await wait(feed.heartbeatMs);
    if (ended() || stream.aborted) break;
    if (!queue.length) {
      await put(': heartbeat\n\n');
      continue;
    }
    for (const s of queue.splice(0)) {
      if (stream.aborted) break;
      await put({ event: 'webhook', id: s.updated_at_ns, data: JSON.stringify(statusRow(s)) });
    }
  }
};

/** The stream of one subscriber; every way it ends (client gone, feed closed, lifetime over, stalled write) unsubscribes. */
const serve = (c: Context, feed: ChangeFeed, configId: string, match: (s: WebhookStatus) => boolean) => {
  const queue: WebhookStatus[] = [];
  let wake: (() => void) | null = null;
  let over = false;
  let unsubscribe: (() => void) | null = null;
  const end = () => {
    over = true;
    unsubscribe?.();
    wake?.();
  };
  const sub = feed.subscribe(configId, {
    rows: (rows) => {
      queue.push(...rows.filter(match));
      if (queue.length > MAX_QUEUED) end();
      else if (queue.length) wake?.();
    },
    end,
  });
  if (sub === 'full') {
    c.header('Retry-After', '5');
    return c.json({ error: { code: 'too_many_streams', message: 'this server has as many event streams open as it allows; try again later' } }, 503);
  }
  if (sub === 'share') throw new RateLimitedError(`config ${configId} has as many event streams open as one config may (api.events.max_per_config)`, 5, 'too_many_streams');
  unsubscribe = sub;
  const lifetime = setTimeout(end, feed.lifetimeMs);
  c.req.raw.signal?.addEventListener('abort', end);
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
    stream.onAbort(end);
    try {
      await pump({ stream, queue, feed, wait, ended: () => over });
    } finally {
      clearTimeout(lifetime);
      end();
    }
  });
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
      '429': {
        description: 'the config has its share of open streams (api.events.max_per_config); Retry-After',
        schema: { $ref: '#/components/schemas/Error' },
      },
      '503': { description: 'too many open streams on this process (api.events.max_subscribers); Retry-After', schema: { $ref: '#/components/schemas/Error' } },
    },
    handler: (d) => [
      async (c) => {
        const q = parseWebhookListQuery(c.req.query());
        // HEAD runs this handler and drops the body: answer the headers without a subscription.
        if (c.req.raw.method === 'HEAD') return c.body(null, 200, SSE_HEADERS);
        const hash = q.endpoint ? await endpointHash(q.endpoint) : null;
        return serve(c, d.changes!, q.configId, (s) => (!q.state || s.state === q.state) && (!hash || s.endpoint_hash === hash));
      },
    ],
  },
];
