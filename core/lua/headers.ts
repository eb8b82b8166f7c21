// Header checks shared by the delivery and transformer runners.

const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
const BAD_VALUE = /[\r\n\0]/;

/**
 * Headers a delivery script cannot set: the signature and webhook identity are made by
 * the sender after the script, and framing headers belong to the HTTP client.
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'webhook-id', 'webhook-timestamp', 'webhook-signature',
  'x-webhook-id', 'x-webhook-attempt', 'x-webhook-timestamp', 'x-webhook-signature',
  'host', 'content-length', 'transfer-encoding', 'connection',
]);

export const lowerKeys = (h: Record<string, string>): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) out[k.toLowerCase()] = v;
  return out;
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
    if (!TOKEN.test(name)) throw new Error(`${what}: invalid header name ${JSON.stringify(rawName)}`);
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'bigint') throw new Error(`${what}.${rawName} must be a string`);
    const text = String(value);
    if (BAD_VALUE.test(text)) throw new Error(`${what}.${rawName} contains a line break or NUL`);
    out[name] = text;
  }
  return out;
};
