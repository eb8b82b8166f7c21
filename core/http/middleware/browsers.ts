import type { Context, MiddlewareHandler } from 'hono';
import { CrossOriginError, HostNotAllowedError } from '../../errors/errors';
import { isLoopbackHost } from '../../security/address';

// What a web page the operator visits can make their browser do to a Howk API: send
// "simple" cross-site requests (no preflight) with any body, and, through DNS rebinding
// (a name of the attacker's that resolves to 127.0.0.1), read the answers as if same-origin.
// Three checks on every request, before API keys: the Host, the origin of state-changing
// requests, and headers that keep answers out of caches and sniffers (docs/SECURITY.md,
// "Cross-site requests, rebinding and request bodies").

/** The names howk-dev answers to when it listens on a loopback address. */
export const LOOPBACK_HOSTS = ['localhost', '127.0.0.1', '[::1]'] as const;

/** howk-dev's api.allowed_hosts when none is configured: the loopback names if it listens on loopback, else any. */
export const devAllowedHosts = (bind: string): string[] => (isLoopbackHost(bind) ? [...LOOPBACK_HOSTS] : []);

/** `Example.COM.:8080` → {name: 'example.com', port: '8080'}; `[::1]` keeps its brackets. */
const splitHost = (value: string): { name: string; port: string | undefined } => {
  const v = value.trim().toLowerCase();
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d*))?$/.exec(v);
  if (!m) return { name: v, port: undefined };
  return { name: m[1]!.replace(/\.$/, ''), port: m[2] || undefined };
};

/** The request's Host (the URL's where a client sent none: then no browser sent it). */
const hostOf = (c: Context): string => c.req.header('host') ?? new URL(c.req.url).host;

/** An IPv4 or bracketed IPv6 address: a Host no DNS answer chose (the URL named the address). */
const isAddress = (name: string): boolean => /^\d{1,3}(\.\d{1,3}){3}$/.test(name) || /^\[[0-9a-f:.]+\]$/.test(name);

/**
 * api.allowed_hosts: a request whose Host is not listed is refused (421) whatever its route.
 * An entry without a port matches the name on any port. Empty: any Host. A Host that is an
 * IP address always passes: rebinding needs a DNS name, and probes and health checks
 * (127.0.0.1, a pod's address) send addresses.
 */
export const hostAllowList = (allowed: readonly string[]): MiddlewareHandler => {
  if (allowed.length === 0) return (_c, next) => next();
  const entries = allowed.map(splitHost);
  return async (c, next) => {
    const host = hostOf(c);
    const { name, port } = splitHost(host);
    if (!isAddress(name) && !entries.some((e) => e.name === name && (e.port === undefined || e.port === port))) {
      throw new HostNotAllowedError(`this server does not answer for Host ${JSON.stringify(host)} (api.allowed_hosts: ${allowed.join(', ')})`);
    }
    return next();
  };
};

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

const originHost = (origin: string): string | undefined => {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
};

/**
 * Every request but GET/HEAD/OPTIONS, /incoming included (providers call it from servers,
 * which send no Origin), is refused when a browser says it comes from another site:
 * `Sec-Fetch-Site` other than same-origin or none (same-site too: localhost:3000 is the same
 * site as localhost:8080), or, from a browser without Sec-Fetch-Site, an `Origin` whose host
 * is not the request's Host. An origin in api.allowed_origins passes. Without either header
 * (curl, SDKs, servers) the request passes: a forged header is no attack by its own sender.
 */
export const crossOriginGuard = (allowedOrigins: readonly string[]): MiddlewareHandler => {
  const trusted = new Set(allowedOrigins.map((o) => o.trim().toLowerCase().replace(/\/+$/, '')));
  return async (c, next) => {
    if (SAFE.has(c.req.method)) return next();
    const origin = c.req.header('origin');
    if (origin !== undefined && trusted.has(origin.toLowerCase())) return next();
    const site = c.req.header('sec-fetch-site')?.toLowerCase();
    const refuse = (why: string) =>
      new CrossOriginError(
        `${c.req.method} refused: ${why}; a browser page of another site may not change anything here (add its origin to api.allowed_origins); nothing was done`,
      );
    if (site !== undefined) {
      if (site === 'same-origin' || site === 'none') return next();
      throw refuse(`Sec-Fetch-Site is ${site}${origin ? ` (Origin ${origin})` : ''}`);
    }
    if (origin === undefined) return next();
    const host = hostOf(c).toLowerCase();
    if (originHost(origin)?.toLowerCase() === host) return next();
    throw refuse(`Origin ${origin} is not this server's (${host})`);
  };
};

/**
 * Every answer of the API: never stored by a cache (keys, secrets and statuses are in them),
 * never sniffed into another type. Headers a route set itself are kept.
 */
export const apiAnswerHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  const h = c.res.headers;
  if (!h.has('cache-control')) h.set('Cache-Control', 'no-store');
  if (!h.has('x-content-type-options')) h.set('X-Content-Type-Options', 'nosniff');
};
