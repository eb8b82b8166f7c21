import type { Context, MiddlewareHandler, Next } from 'hono';
import { readUpTo } from '../../domain/bounded-read';
import { TooLargeError } from '../../errors/errors';

// The one body limit of every route that reads a body (enqueue, /incoming, scripts, and the
// admin JSON routes through readJsonBody): a declared Content-Length over the limit is refused
// before a byte is read; a body without one (chunked) is read with a counter and the read stops
// at the first chunk past the limit. Either way at most the limit plus a chunk is held.

/** Bytes the request declares, when the HTTP parser will deliver exactly that many (no chunked encoding). */
const declaredLength = (c: Context): number | undefined => {
  const length = c.req.header('content-length');
  return length !== undefined && c.req.header('transfer-encoding') === undefined ? parseInt(length, 10) : undefined;
};

/**
 * The body, at most `max` bytes, else a TooLargeError naming `limit` (the configured request
 * limit unless given). The stream is cancelled at the first chunk past `max`; what the client
 * still sends is the host's to discard (on Node, @hono/node-server drains it, bounded, after
 * the answer: workers/node/linger.ts).
 */
export const readLimited = async (c: Context, max: number, limit = max): Promise<Uint8Array> => {
  const declared = declaredLength(c);
  if (declared !== undefined) {
    if (declared > max) throw new TooLargeError('request body', limit);
    // The length is bounded: the host's own read (on Node straight from the socket) is fine.
    return new Uint8Array(await c.req.arrayBuffer());
  }
  const body = c.req.raw.body;
  if (!body) return new Uint8Array(0);
  const bytes = await readUpTo(body, max);
  if (!bytes) throw new TooLargeError('request body', limit);
  return bytes;
};

/** A 413 over `maxSize` bytes, reported as `limit`, before the route's handler reads the body. */
export const limitBody =
  (maxSize: number, limit = maxSize): MiddlewareHandler =>
  async (c: Context, next: Next) => {
    const declared = declaredLength(c);
    // With a Content-Length the header decides. Not touching the body stream here matters on
    // Node: @hono/node-server then reads the body straight from the socket instead of building
    // a web Request with a ReadableStream (a tenth of howk-api's CPU under single enqueues).
    if (declared !== undefined) {
      if (declared > maxSize) throw new TooLargeError('request body', limit);
      return next();
    }
    // No length to trust: read it here, counted, and hand the route the bytes.
    const bytes = await readLimited(c, maxSize, limit);
    c.req.raw = new Request(c.req.url, { method: c.req.method, headers: c.req.raw.headers, body: bytes as Uint8Array<ArrayBuffer>, signal: c.req.raw.signal });
    return next();
  };
