import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { TooLargeError } from '../../errors/errors';
import { errorResponse } from '../errors';

/** A 413 over `maxSize` bytes, reported as `limit` (the configured request limit unless given). */
export const limitBody = (maxSize: number, limit = maxSize): MiddlewareHandler =>
  bodyLimit({
    maxSize,
    // The unread rest of the body would poison a kept-alive connection: close it.
    onError: (c) => {
      c.header('Connection', 'close');
      return errorResponse(c, new TooLargeError('request body', limit));
    },
  });
