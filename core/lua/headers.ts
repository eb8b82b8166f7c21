import { CLIENT_MANAGED_HEADERS, headerValueProblem, isHeaderName, SIGNATURE_HEADERS } from '../security/headers';

// Header checks shared by the delivery and transformer runners; the rules themselves are
// core/security/headers.ts, the same as the enqueue API's and the sender's.

/**
 * Headers a delivery script cannot set: the signature and webhook identity are made by
 * the sender after the script, and framing and hop-by-hop headers belong to the HTTP client.
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([...SIGNATURE_HEADERS, ...CLIENT_MANAGED_HEADERS]);

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
    if (!isHeaderName(name)) throw new Error(`${what}: invalid header name ${JSON.stringify(rawName)}`);
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'bigint') throw new Error(`${what}.${rawName} must be a string`);
    const text = String(value);
    const problem = headerValueProblem(text);
    if (problem) throw new Error(`${what}.${rawName}: ${problem}`);
    out[name] = text;
  }
  return out;
};
