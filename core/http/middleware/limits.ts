import type { MiddlewareHandler } from 'hono';
import { HeadersTooLargeError } from '../../errors/errors';
import type { ApiDeps, HeaderSize } from '../deps';

/** Headers as the Fetch API's Headers holds them: one entry per name (values joined), each Set-Cookie its own. */
export const headerSize = (headers: Headers): HeaderSize => {
  let count = 0;
  let bytes = 0;
  headers.forEach((value, name) => {
    count++;
    bytes += name.length + value.length;
  });
  return { count, bytes };
};

/**
 * Header limits on every request, before auth: count, and bytes of names plus values as
 * parsed (repeated headers count once, joined). Runtime-agnostic, so the edge gets them too;
 * the Node server's own parser limit sits above these (workers/node/fleet.ts).
 */
export const headerLimits = (d: ApiDeps): MiddlewareHandler => {
  const { max_request_headers: maxCount, max_request_header_bytes: maxBytes } = d.config.api;
  return async (c, next) => {
    const { count, bytes } = d.headerSize?.(c) ?? headerSize(c.req.raw.headers);
    if (count > maxCount) throw new HeadersTooLargeError(`${count} request headers`, maxCount);
    if (bytes > maxBytes) throw new HeadersTooLargeError(`${bytes} bytes of request headers`, maxBytes);
    return next();
  };
};
