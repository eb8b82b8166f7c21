import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Config } from '../config/schema';
import { NotFoundError, TooLargeError, errorMessage } from '../errors/errors';
import type { Enqueuer } from '../pipeline/enqueue';
import type { Logger } from '../pipeline/logger';
import type { HotState } from '../ports/hot-state';
import { checkConfigId, parseBatchBody, parseEnqueueBody } from './enqueue-request';
import { errorResponse } from './errors';

export type DependencyCheck = { name: string; check: () => Promise<void> };

export type ApiDeps = {
  config: Config;
  enqueue: Enqueuer;
  hot: HotState;
  log: Logger;
  dependencies: DependencyCheck[];
  clock: { now(): number };
};

const timed = async (d: DependencyCheck) => {
  const t0 = Date.now();
  try {
    await d.check();
    return { name: d.name, ok: true, latency_ms: Date.now() - t0 };
  } catch (e) {
    return { name: d.name, ok: false, latency_ms: Date.now() - t0, error: errorMessage(e) };
  }
};

/** Routes shared by howk-api and howk-dev (and, for enqueue, the edge). */
export const createApiApp = (d: ApiDeps) => {
  const app = new Hono();
  const limits = d.config.api;
  app.onError((e, c) => errorResponse(c, e, d.log));
  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` } }, 404));

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

  app.get('/webhooks/:id/status', async (c) => {
    const s = await d.hot.getStatus(c.req.param('id'));
    if (!s) throw new NotFoundError(`webhook ${c.req.param('id')}`);
    const { updated_at_ns: _ns, ...view } = s;
    return c.json(view);
  });

  app.get('/stats', async (c) => {
    const now = d.clock.now();
    const [h1, h24] = await Promise.all([d.hot.stats(now, 1), d.hot.stats(now, 24)]);
    return c.json({ last_1h: h1, last_24h: h24 });
  });

  app.get('/health', (c) => c.json({ status: 'ok' }));

  app.get('/ready', async (c) => {
    const checks = await Promise.all(d.dependencies.map(timed));
    const ok = checks.every((x) => x.ok);
    return c.json({ status: ok ? 'ready' : 'not_ready', dependencies: checks }, ok ? 200 : 503);
  });

  app.get('/health/dependencies', async (c) => {
    const checks = await Promise.all(d.dependencies.map(timed));
    const ok = checks.every((x) => x.ok);
    return c.json({ status: ok ? 'ok' : 'degraded', dependencies: Object.fromEntries(checks.map(({ name, ...r }) => [name, r])) }, ok ? 200 : 503);
  });

  return app;
};
