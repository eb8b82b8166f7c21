import { readUpTo } from '../domain/bounded-read';
import type { FetchLike, HttpPolicy } from './types';

// The http module's transport: an injected fetch, a host allowlist checked on the
// first URL and on every redirect hop, a timeout and a response-size cap.

export const HTTP_DEFAULTS = { timeoutMs: 5_000, maxResponseBytes: 1024 * 1024, maxRedirects: 3 } as const;

/** "example.com" matches exactly; "*.example.com" matches its subdomains (not the apex). */
export const hostAllowed = (host: string, allow: readonly string[]): boolean => {
  const h = host.toLowerCase().replace(/\.$/, '');
  return allow.some((a) => {
    const p = a.toLowerCase();
    return p.startsWith('*.') ? h.endsWith(p.slice(1)) && h.length > p.length - 1 : h === p;
  });
};

/** Parses and checks a URL against the allowlist; the message is what Lua receives. */
export const checkUrl = (raw: string, allow: readonly string[]): URL => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`invalid URL: ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`scheme not allowed: ${url.protocol}`);
  if (url.username || url.password) throw new Error('credentials in URLs are not allowed');
  // URL.hostname keeps IPv6 brackets; the allowlist is written without them.
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!hostAllowed(host, allow)) throw new Error(`host not allowed: ${host}`);
  return url;
};

const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

export type HttpRequest = { method: string; url: string; body?: string; headers: Record<string, string>; timeoutMs?: number };
export type HttpResponse = { status: number; body: Uint8Array; headers: Record<string, string> };

/** The body of `res`, refused past `cap` bytes (declared or read): the http module's cap, also applied by the Node thread pool's proxy. */
export const readCapped = async (res: Response, cap: number): Promise<Uint8Array> => {
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > cap) {
    await res.body?.cancel();
    throw new Error(`response body exceeds ${cap} bytes`);
  }
  if (!res.body) return new Uint8Array(0);
  const bytes = await readUpTo(res.body, cap);
  if (!bytes) throw new Error(`response body exceeds ${cap} bytes`);
  return bytes;
};

export const httpRequest = async (fetchFn: FetchLike, policy: HttpPolicy, req: HttpRequest, runSignal: AbortSignal): Promise<HttpResponse> => {
  const timeoutMs = Math.min(req.timeoutMs ?? policy.timeoutMs ?? HTTP_DEFAULTS.timeoutMs, policy.timeoutMs ?? HTTP_DEFAULTS.timeoutMs);
  const cap = policy.maxResponseBytes ?? HTTP_DEFAULTS.maxResponseBytes;
  const maxRedirects = policy.maxRedirects ?? HTTP_DEFAULTS.maxRedirects;
  const ctl = new AbortController();
  const onRunAbort = (): void => ctl.abort(runSignal.reason);
  runSignal.addEventListener('abort', onRunAbort, { once: true });
  const timer = setTimeout(() => ctl.abort(new Error(`http timeout after ${timeoutMs} ms`)), timeoutMs);
  try {
    let url = checkUrl(req.url, policy.allow);
    let method = req.method;
    let body = req.body;
    let sendHeaders = req.headers;
    for (let hop = 0; ; hop++) {
      const res = await fetchFn(url.href, { method, headers: sendHeaders, body, redirect: 'manual', signal: ctl.signal });
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        await res.body?.cancel();
        if (hop >= maxRedirects) throw new Error(`too many redirects (limit ${maxRedirects})`);
        // Every hop is checked: a redirect must not lead the script to a host it may not call.
        const next = checkUrl(new URL(location, url).href, policy.allow);
        // As browsers do: credentials meant for one origin are not handed to another.
        if (next.origin !== url.origin) sendHeaders = Object.fromEntries(Object.entries(sendHeaders).filter(([k]) => !CREDENTIAL_HEADERS.has(k.toLowerCase())));
        url = next;
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
          method = 'GET';
          body = undefined;
        }
        continue;
      }
      const headers: Record<string, string> = {};
      res.headers.forEach((v, k) => (headers[k] = v));
      return { status: res.status, body: await readCapped(res, cap), headers };
    }
  } catch (e) {
    if (ctl.signal.aborted) throw ctl.signal.reason instanceof Error ? ctl.signal.reason : new Error('http request aborted');
    throw e;
  } finally {
    clearTimeout(timer);
    runSignal.removeEventListener('abort', onRunAbort);
  }
};
