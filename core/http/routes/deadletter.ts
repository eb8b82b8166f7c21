import { Hono } from 'hono';
import { z } from 'zod';
import { NotFoundError } from '../../errors/errors';
import { parseDeadLetterListQuery } from '../../reconcile/listing';
import { deadLetterView } from '../../pipeline/redact';
import type { ApiDeps } from '../deps';
import type { DeadLetterStore } from '../../ports/hot-state';
import { enqueueItemSchema } from '../../domain/enqueue';
import { readJsonBody } from '../json-body';
import { conflictAware, redriverOf } from './webhooks';

// GET /deadletter (listing), GET /deadletter/:id (one, payload included) and
// POST /deadletter/:id/replay (a new webhook recording replay_of; the original never changes).

/**
 * A listing row: the dead letter (reason, last status, first 1 KB of the last response,
 * secret-looking headers and the endpoint's userinfo and query values redacted) with the
 * webhook's payload left out.
 */
export const deadLetterRow = (record: string) => {
  const v = JSON.parse(deadLetterView(record)) as Record<string, unknown> & { webhook?: Record<string, unknown> };
  if (v.webhook && typeof v.webhook === 'object') {
    const { payload, signing_secret: _s, ...w } = v.webhook;
    v.webhook = { ...w, payload_bytes: new TextEncoder().encode(JSON.stringify(payload ?? null)).length };
  }
  return v;
};

export const deadLetterRoutes = (d: ApiDeps & { hot: DeadLetterStore }) => {
  const app = new Hono();
  const item = enqueueItemSchema(d.config.api).shape;
  const replayBody = z
    .object({ headers: item.headers, signing_secret: item.signing_secret, max_attempts: item.max_attempts, idempotency_key: item.idempotency_key })
    .strict();

  app.get('/deadletter', async (c) => {
    const q = parseDeadLetterListQuery(c.req.query());
    const page = await d.hot.listDeadLetters(q);
    return c.json({ items: page.items.map(deadLetterRow), count: page.items.length, next_cursor: page.next });
  });

  app.get('/deadletter/:id', async (c) => {
    const record = await d.hot.getDeadLetter(c.req.param('id'));
    if (!record) throw new NotFoundError(`dead letter of webhook ${c.req.param('id')}`);
    // As stored on howk.deadletter (the payload's bytes as they were enqueued), secrets masked.
    return c.body(deadLetterView(record), 200, { 'content-type': 'application/json' });
  });

  app.post('/deadletter/:id/replay', (c) =>
    conflictAware(c, async () => {
      const redrive = redriverOf(d);
      const { max_attempts, ...rest } = await readJsonBody(c, replayBody, { optional: true });
      const r = await redrive.replay(c.req.param('id'), { ...rest, ...(max_attempts ? { attempts: max_attempts } : {}) });
      if (r.status === 'pending') c.header('Location', `/webhooks/${r.webhook_id}/status`);
      return c.json(r, r.status === 'duplicate' ? 200 : 202);
    }),
  );
  return app;
};
