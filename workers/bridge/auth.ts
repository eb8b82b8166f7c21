import type { MiddlewareHandler } from 'hono';
import { timingSafeEqual, utf8 } from '../../core/signing/encoding';

// The two Upstash credentials: Basic for the Kafka dialect, Bearer for the Redis dialect.
// Compared in constant time over the whole credential, so a mismatch leaks neither which
// part was wrong nor how much of it matched.

const same = (got: string, want: string): boolean => timingSafeEqual(utf8(got), utf8(want));

const deny = (scheme: string) =>
  new Response(JSON.stringify({ error: 'Unauthorized' }), { status: 401, headers: { 'content-type': 'application/json', 'www-authenticate': `${scheme} realm="howk-bridge"` } });

export const basicAuth = (username: string, password: string): MiddlewareHandler => {
  const want = `${username}:${password}`;
  return async (c, next) => {
    const h = c.req.header('authorization') ?? '';
    let got = '';
    if (/^basic /i.test(h)) {
      try {
        got = atob(h.slice(6).trim());
      } catch {
        got = '';
      }
    }
    if (!same(got, want)) return deny('Basic');
    await next();
  };
};

export const bearerAuth =
  (token: string): MiddlewareHandler =>
  async (c, next) => {
    const h = c.req.header('authorization') ?? '';
    const got = /^bearer /i.test(h) ? h.slice(7).trim() : '';
    if (!same(got, token)) return deny('Bearer');
    await next();
  };
