import type { Context, MiddlewareHandler } from 'hono';
import { AuthError, ForbiddenError, NotFoundError, RateLimitedError, UnavailableError } from '../../errors/errors';
import { grants, reaches, type ApiKeyRecord } from '../../security/api-keys';
import { clientAddress } from '../../security/auth-throttle';
import { createRateLimiter } from '../../security/rate-limit';
import type { Access } from '../access';
import type { ApiDeps } from '../deps';

export type AuthVariables = { apiKey?: ApiKeyRecord };

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * A bound key's check of the config the route acts on (the route's `config`, core/http/route.ts).
 * A resource named by id (a webhook, a dead letter) of another config looks like no resource.
 */
const checkConfig = async (d: ApiDeps, c: Context, key: ApiKeyRecord, access: Extract<Access, { kind: 'key' }>): Promise<void> => {
  const from = access.route?.config;
  if (from?.from === 'self' || from?.from === 'handler') return;
  if (from?.from === 'owner') {
    const id = access.params[from.name] ?? '';
    const owner = await from.owner(d, id);
    // No owner: the route answers its own 404.
    if (owner !== null && !reaches(key, owner)) throw new NotFoundError(from.notFound(id));
    return;
  }
  // The same parse as the route's (c.req.query(): the first of repeated names), so both read one value.
  const configId = from === undefined ? null : from.from === 'param' ? (access.params[from.name] ?? null) : (c.req.query()[from.name] ?? null);
  if (!reaches(key, configId)) {
    throw new ForbiddenError(
      configId === null ? `API key ${key.id} is bound to configs; this route is not about one config` : `API key ${key.id} does not reach config ${configId}`,
    );
  }
};

/**
 * API keys on every route but the open ones (health, the spec, /incoming). Runs before the
 * routes, so a refused request never reaches the enqueuer: nothing is produced.
 * Order: key → rate limit (also for a key that then lacks the scope) → scope → config.
 */
export const authMiddleware = (d: ApiDeps, accessOf: (method: string, path: string) => Access): MiddlewareHandler<{ Variables: AuthVariables }> => {
  const auth = d.config.api.auth;
  const limit = createRateLimiter(auth.rate_limit, auth.rate_burst);
  return async (c, next) => {
    const access = accessOf(c.req.method, c.req.path);
    if (access.kind === 'open' || !auth.enabled) return next();
    // Fail closed: without a loaded key table nobody gets in.
    if (!d.keys || !d.keys.synced()) throw new UnavailableError('API keys are not loaded yet', 1);
    const token = BEARER.exec(c.req.header('authorization') ?? '')?.[1];
    if (!token) throw new AuthError();
    // The client: a verifier that reads keys over the network limits its lookups per client.
    const key = await d.keys.verify(token, clientAddress(d.remoteAddress?.(c), c.req.header('x-forwarded-for'), d.config.api.trust_forwarded_for));
    if (!key) throw new AuthError('invalid or revoked API key');
    const rl = d.keyRateLimit ? await d.keyRateLimit(key.id, d.clock.now()) : limit(key.id, d.clock.now());
    if (!rl.ok) throw new RateLimitedError(`API key ${key.id} is over ${auth.rate_limit} requests per second`, rl.retryAfterSec);
    if (!grants(key, access.scope)) throw new ForbiddenError(`API key ${key.id} lacks the ${access.scope} scope`);
    if (key.config_ids !== null) await checkConfig(d, c, key, access);
    c.set('apiKey', key);
    return next();
  };
};
