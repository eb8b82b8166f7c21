import type { Context } from 'hono';
import type { HeaderSize } from '../../core/http/deps';

const isHttpWs = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** A value's length once its leading and trailing HTTP whitespace is gone, as Headers stores it. */
const trimmedLength = (v: string): number => {
  let a = 0;
  let b = v.length;
  while (a < b && isHttpWs(v.charCodeAt(a))) a++;
  while (b > a && isHttpWs(v.charCodeAt(b - 1))) b--;
  return b - a;
};

/**
 * What core/http/middleware/limits.ts's headerSize finds in a Headers object, from Node's raw
 * header list (name, value, name, value...): names count once with their values joined by a
 * two-character separator, each Set-Cookie on its own, pseudo-headers (:path) left out.
 * Undefined where the request did not come through @hono/node-server.
 */
export const nodeHeaderSize = (c: Context): HeaderSize | undefined => {
  const raw = (c.env as { incoming?: { rawHeaders?: string[] } } | undefined)?.incoming?.rawHeaders;
  if (!Array.isArray(raw)) return undefined;
  let count = 0;
  let bytes = 0;
  const seen = new Set<string>();
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.startsWith(':')) continue;
    const lower = name.toLowerCase();
    const len = trimmedLength(raw[i + 1]!);
    if (lower === 'set-cookie' || !seen.has(lower)) {
      count++;
      bytes += name.length + len;
      seen.add(lower);
    } else bytes += 2 + len;
  }
  return { count, bytes };
};
