import type { MiddlewareHandler } from 'hono';
import { HowkError } from '../../errors/errors';
import type { PipelineEvents } from '../../metrics/events';
import type { Route } from '../route';

/** The routes that enqueue webhooks: the enqueue calls and the /incoming transformers. */
export const countsEnqueues = (r: Route): boolean => r.method === 'post' && (/\/enqueue(\/batch)?$/.test(r.path) || r.path.startsWith('/incoming/'));

/**
 * Counts each answer of an enqueue route: accepted (2xx) or rejected with the error code
 * (the typed error the handler threw; `http_<status>` for an answer without one). Requests
 * refused before the route (API key, header limits) are not enqueue requests.
 */
export const countEnqueues =
  (events: PipelineEvents): MiddlewareHandler =>
  async (c, next) => {
    await next();
    const status = c.res.status;
    if (status < 300) events.enqueueRequest('accepted', '');
    else events.enqueueRequest('rejected', c.error instanceof HowkError ? c.error.code : c.error ? 'internal' : `http_${status}`);
  };
