import type { Context, MiddlewareHandler } from 'hono';
import { UnsupportedMediaTypeError } from '../../errors/errors';

/** application/json or application/<anything>+json, with any parameters (a charset). */
const JSON_TYPE = /^application\/(?:[a-z0-9.!#$&^_-]+\+)?json[ \t]*(?:;|$)/i;

const hasBody = (c: Context): boolean => {
  if (c.req.header('transfer-encoding') !== undefined) return true;
  const length = c.req.header('content-length');
  return length !== undefined && parseInt(length, 10) > 0;
};

/**
 * A JSON route takes its body as application/json only: text/plain, a form or no type is a
 * 415 before anything is read. Besides telling a client its mistake, this keeps browsers out:
 * application/json is not a CORS "simple" type, so a page of another site cannot send it
 * without a preflight that Howk never grants. A route whose body is optional takes a request
 * without a body whatever its type.
 */
export const requireJson =
  (bodyRequired: boolean): MiddlewareHandler =>
  async (c, next) => {
    const type = c.req.header('content-type');
    if (type !== undefined && JSON_TYPE.test(type.trim())) return next();
    if (!bodyRequired && !hasBody(c)) return next();
    throw new UnsupportedMediaTypeError(
      `${type === undefined ? 'no Content-Type' : `Content-Type ${type}`}: this route reads a JSON body, send it as Content-Type: application/json; nothing was done`,
    );
  };
