import type { Context } from 'hono';
import {
  AuthError,
  BackloggedError,
  ConflictError,
  CrossOriginError,
  ForbiddenError,
  HeadersTooLargeError,
  HostNotAllowedError,
  HowkError,
  KeyCheckUnavailableError,
  NotConfiguredError,
  NotFoundError,
  OverloadedError,
  RateLimitedError,
  TooLargeError,
  UnavailableError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../errors/errors';
import type { Logger } from '../ports/logger';

/** The only place where typed errors become HTTP responses. */
export const errorResponse = (c: Context, e: unknown, log?: Logger): Response => {
  if (e instanceof ValidationError) {
    return c.json({ error: { code: e.code, message: e.message, field: e.field ?? null, issues: e.issues } }, 400);
  }
  if (e instanceof HeadersTooLargeError) return c.json({ error: { code: e.code, message: e.message, limit: e.limit } }, 431);
  if (e instanceof TooLargeError) return c.json({ error: { code: e.code, message: e.message, limit: e.limit } }, 413);
  if (e instanceof AuthError) {
    c.header('WWW-Authenticate', 'Bearer realm="howk"');
    return c.json({ error: { code: e.code, message: e.message } }, 401);
  }
  if (e instanceof UnsupportedMediaTypeError) return c.json({ error: { code: e.code, message: e.message } }, 415);
  if (e instanceof CrossOriginError) return c.json({ error: { code: e.code, message: e.message } }, 403);
  if (e instanceof HostNotAllowedError) return c.json({ error: { code: e.code, message: e.message } }, 421);
  if (e instanceof ForbiddenError) return c.json({ error: { code: e.code, message: e.message } }, 403);
  if (e instanceof BackloggedError) {
    c.header('Retry-After', String(e.retryAfterSec));
    return c.json({ error: { code: e.code, message: e.message, config: e.config } }, 429);
  }
  if (e instanceof OverloadedError) {
    c.header('Retry-After', String(e.retryAfterSec));
    return c.json({ error: { code: e.code, message: e.message } }, 503);
  }
  if (e instanceof RateLimitedError) {
    c.header('Retry-After', String(e.retryAfterSec));
    return c.json({ error: { code: e.code, message: e.message } }, 429);
  }
  if (e instanceof ConflictError) return c.json({ error: { code: e.code, message: e.message } }, 409);
  if (e instanceof NotConfiguredError) return c.json({ error: { code: e.code, message: e.message } }, 501);
  if (e instanceof NotFoundError) return c.json({ error: { code: e.code, message: e.message } }, 404);
  if (e instanceof UnavailableError) {
    c.header('Retry-After', String(e.retryAfterSec));
    // The cause stays in the logs; only the key check's own message says what failed.
    const message = e instanceof KeyCheckUnavailableError ? e.message : 'a dependency is unavailable; nothing was accepted, retry later';
    return c.json({ error: { code: e.code, message } }, 503);
  }
  if (e instanceof HowkError) return c.json({ error: { code: e.code, message: e.message } }, 400);
  log?.error('unhandled error', { error: e instanceof Error ? e.stack : String(e) });
  return c.json({ error: { code: 'internal', message: 'internal error' } }, 500);
};
