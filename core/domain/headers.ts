// Outbound header rules: the one check used by the enqueue API, the delivery-script and
// transformer output, and the worker right before it sends. They are the HTTP client's own
// rules (undici's request builder; Node's http agrees), plus the hop-by-hop and framing
// names that only the client may set. A header the client would refuse while building the
// request must never reach it: undici raises that error inside its connection pool, where
// it leaves one pooled connection of the destination unusable until the process restarts.

/** RFC 9110 token (field-name). */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** RFC 9110 field-value octets as undici and Node check them: HTAB, VCHAR, SP and obs-text. A JS char above U+00FF cannot be sent as one byte. */
const BAD_VALUE_CHAR = /[^\t\x20-\x7e\x80-\xff]/;

/**
 * Names the HTTP client manages (framing, connection handling) or that are hop-by-hop
 * (RFC 9110 §7.6.1): undici 7 refuses host/content-length duplicates, transfer-encoding,
 * keep-alive, upgrade and expect outright and acts on connection; the rest would be
 * forwarded but mean nothing end to end, or change how the connection is used.
 */
export const CLIENT_MANAGED_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'upgrade',
  'expect',
  'transfer-encoding',
  'te',
  'trailer',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'host',
  'content-length',
  'http2-settings',
]);

/** Set by the sender on every attempt (identity and signatures): a webhook or script cannot set them. */
export const SIGNATURE_HEADERS: ReadonlySet<string> = new Set([
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'x-webhook-id',
  'x-webhook-attempt',
  'x-webhook-timestamp',
  'x-webhook-signature',
]);

export const isHeaderName = (name: string): boolean => HEADER_NAME.test(name);

export const isHeaderValue = (value: string): boolean => !BAD_VALUE_CHAR.test(value);

/** Why `value` cannot be sent as a header value; undefined when it can. */
export const headerValueProblem = (value: string): string | undefined => {
  const m = BAD_VALUE_CHAR.exec(value);
  if (!m) return undefined;
  const code = m[0].codePointAt(0)!;
  const at = `U+${code.toString(16).toUpperCase().padStart(4, '0')} at index ${m.index}`;
  return code > 0xff
    ? `header values may hold only tab, printable ASCII and bytes 0x80-0xFF (found ${at}, which is not one byte)`
    : `header values may hold only tab, printable ASCII and bytes 0x80-0xFF (found control character ${at})`;
};

/** Why this header cannot be sent at all, by anyone; undefined when the HTTP client accepts it. */
export const headerProblem = (name: string, value: string): string | undefined => {
  if (!isHeaderName(name)) return `${JSON.stringify(name)} is not a valid header name (RFC 9110 token)`;
  if (CLIENT_MANAGED_HEADERS.has(name.toLowerCase())) return `${name} is managed by the HTTP client and cannot be set`;
  if (typeof value !== 'string') return `${name} must be a string`;
  return headerValueProblem(value);
};

export type HeaderIssue = { name: string; message: string };

// The worker checks every attempt's headers (twice: before signing and in the sender), and
// the names are nearly always the same dozen: a name that passed once passes again. Bounded,
// as names come from users.
const sendableNames = new Set<string>();
const MAX_SENDABLE_NAMES = 1000;

/** What BAD_VALUE_CHAR finds nothing in, without a regex call: tab, 0x20-0x7E, 0x80-0xFF. */
const plainValue = (v: string): boolean => {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 ? c !== 0x09 : c === 0x7f || c > 0xff) return false;
  }
  return true;
};

/** The first header of `headers` the HTTP client would refuse; undefined when all can be sent. */
export const findHeaderIssue = (headers: Readonly<Record<string, string>>): HeaderIssue | undefined => {
  for (const name in headers) {
    const value = headers[name]!;
    if (sendableNames.has(name) && typeof value === 'string' && plainValue(value)) continue;
    const message = headerProblem(name, value);
    if (message) return { name, message };
    if (sendableNames.size < MAX_SENDABLE_NAMES) sendableNames.add(name);
  }
  return undefined;
};

/** A header table read back from Lua → lower-case names and string values; throws a message for Lua. */
export const checkHeaders = (v: unknown, what: string): Record<string, string> => {
  if (v === undefined) return {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    // An empty Lua table reads as {}; a list is a mistake.
    throw new Error(`${what} must be a table of name = value`);
  }
  const out: Record<string, string> = {};
  for (const [rawName, value] of Object.entries(v)) {
    const name = rawName.toLowerCase();
    if (!isHeaderName(name)) throw new Error(`${what}: invalid header name ${JSON.stringify(rawName)}`);
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'bigint') throw new Error(`${what}.${rawName} must be a string`);
    const text = String(value);
    const problem = headerValueProblem(text);
    if (problem) throw new Error(`${what}.${rawName}: ${problem}`);
    out[name] = text;
  }
  return out;
};
