import { Hono } from 'hono';
import { NotFoundError } from '../../errors/errors';
import { statusView } from '../../pipeline/redact';
import type { ApiDeps } from '../deps';

export const statusRoutes = (d: ApiDeps) => {
  const app = new Hono();
  app.get('/webhooks/:id/status', async (c) => {
    const s = await d.hot.getStatus(c.req.param('id'));
    if (!s) throw new NotFoundError(`webhook ${c.req.param('id')}`);
    const { updated_at_ns: _ns, ...view } = s;
    return c.json(statusView(view));
  });

  app.get('/stats', async (c) => {
    const now = d.clock.now();
    const [h1, h24] = await Promise.all([d.hot.stats(now, 1), d.hot.stats(now, 24)]);
    return c.json({ last_1h: h1, last_24h: h24 });
  });
  return app;
};
