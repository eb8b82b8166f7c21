import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { TooLargeError } from '../../errors/errors';
import type { ApiDeps } from '../deps';
import { checkConfigId } from '../../domain/config-id';
import { parseBatchBody, parseEnqueueBody } from '../../domain/enqueue';
import { errorResponse } from '../errors';

export const enqueueRoutes = (d: ApiDeps) => {
  const app = new Hono();
  const limits = d.config.api;
  const limitBody = bodyLimit({
    maxSize: limits.max_request_size,
    // The unread rest of the body would poison a kept-alive connection: close it.
    onError: (c) => {
      c.header('Connection', 'close');
      return errorResponse(c, new TooLargeError('request body', limits.max_request_size));
    },
  });

  app.post('/webhooks/:config/enqueue', limitBody, async (c) => {
    const configId = c.req.param('config');
    checkConfigId(configId);
    const item = parseEnqueueBody(await c.req.text(), limits);
    const [r] = await d.enqueue(configId, [item]);
    c.header('Location', `/webhooks/${r!.webhook_id}/status`);
    return c.json({ webhook_id: r!.webhook_id, status: r!.status }, r!.status === 'duplicate' ? 200 : 202);
  });

  app.post('/webhooks/:config/enqueue/batch', limitBody, async (c) => {
    const configId = c.req.param('config');
    checkConfigId(configId);
    const items = parseBatchBody(await c.req.text(), limits);
    const results = await d.enqueue(configId, items);
    return c.json({ count: results.length, accepted: results.filter((r) => r.status === 'pending').length, results: results.map((r, index) => ({ index, ...r })) }, 202);
  });
  return app;
};
