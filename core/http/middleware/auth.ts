import type { MiddlewareHandler } from 'hono';
import { AuthError, ForbiddenError, NotFoundError, RateLimitedError, UnavailableError } from '../../errors/errors';
import { grants, reaches, type ApiKeyRecord } from '../../security/api-keys';
import { createRateLimiter } from '../../security/rate-limit';
import { routeAccess } from '../../security/route-access';
import type { ApiDeps } from '../deps';

export type AuthVariables = { apiKey?: ApiKeyRecord };

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * API keys on every route but the open ones (health, the spec, /incoming). Runs before the
 * routes, so a refused request never reaches the enqueuer: nothing is produced.
 * Order: key → rate limit (also for a key that then lacks the scope) → scope → config.
 */
export const authMiddleware = (d: ApiDeps): MiddlewareHandler<{ Variables: AuthVariables }> => {
  const auth = d.config.api.auth;
  const limit = createRateLimiter(auth.rate_limit, auth.rate_burst);
  return async (c, next) => {
    const access = routeAccess(c.req.method, c.req.path);
    if (access.kind === 'open' || !auth.enabled) return next();
    // Fail closed: without a loaded key table nobody gets in.
    if (!d.keys || !d.keys.synced()) throw new UnavailableError('API keys are not loaded yet', 1);
    const token = BEARER.exec(c.req.header('authorization') ?? '')?.[1];
    if (!token) throw new AuthError();
    const key = await d.keys.verify(token);
    if (!key) throw new AuthError('invalid or revoked API key');
    const rl = limit(key.id, d.clock.now());
    if (!rl.ok) throw new RateLimitedError(`API key ${key.id} is over ${auth.rate_limit} requests per second`, rl.retryAfterSec);
    if (!grants(key, access.scope)) throw new ForbiddenError(`API key ${key.id} lacks the ${access.scope} scope`);
    if (key.config_ids !== null) {
      if (access.webhookId !== undefined) {
        // A bound key sees only its configs' webhooks; another config's looks like no webhook.
        const s = await d.hot.getStatus(access.webhookId);
        if (s && !reaches(key, s.config_id)) throw new NotFoundError(`webhook ${access.webhookId}`);
      } else if (!reaches(key, access.configId)) {
        throw new ForbiddenError(access.configId === null ? `API key ${key.id} is bound to configs; this route is not about one config` : `API key ${key.id} does not reach config ${access.configId}`);
      }
    }
    c.set('apiKey', key);
    return next();
  };
};
