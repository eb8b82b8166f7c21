import type { MiddlewareHandler } from 'hono';
import { OverloadedError } from '../../errors/errors';
import { noDoorMeter } from '../../metrics/door';
import type { ApiDeps } from '../deps';

/** Probes and scrapes are answered whatever the load: an instance that is busy is not dead. */
const EXEMPT = new Set(['/health', '/ready', '/health/dependencies', '/metrics']);

/**
 * api.max_inflight_requests: a request past the bound is refused before auth and before its
 * body is read (503 + Retry-After), so it records nothing. A request counts until its handler
 * has answered (a waiting enqueue counts for the whole wait).
 */
export const inflightLimit = (d: ApiDeps): MiddlewareHandler => {
  const max = d.config.api.max_inflight_requests;
  const meter = d.door ?? noDoorMeter;
  let inflight = 0;
  return async (c, next) => {
    if (EXEMPT.has(c.req.path)) return next();
    if (max > 0 && inflight >= max) {
      meter.refused('inflight');
      throw new OverloadedError(`this instance is handling ${inflight} requests (api.max_inflight_requests); nothing was recorded, retry later`);
    }
    meter.inflight(++inflight);
    try {
      await next();
    } finally {
      meter.inflight(--inflight);
    }
  };
};
