import { toBase64, toHex, utf8 } from '../signing/encoding';

// Values a script run obtained from credentials (or the worker from ${VAR} secrets) must not
// come back to an API caller or a log. A string that contains one, as is or in a common
// encoding (base64, base64url, hex, URL encoding), is replaced as a whole by `[redacted]`.
// A script that transforms a value otherwise (reversing it, say) defeats this: the boundary
// that holds is the credential's namespace scope (docs/SECURITY.md).

export const REDACTED = '[redacted]';

const forms = (v: string): string[] => {
  const b = utf8(v);
  // Inside a longer text (`Basic base64(user:token)`) the value's base64 depends on its
  // offset modulo 3: the whole groups of each of the three alignments are what shows.
  const b64 = [0, 1, 2].map((s) => {
    const part = b.slice(s);
    return toBase64(part.slice(0, part.length - (part.length % 3)));
  });
  const all = [...b64, ...b64.map((x) => x.replace(/\+/g, '-').replace(/\//g, '_')), toHex(b), encodeURIComponent(v)];
  return [v, ...all.filter((f) => f.length >= 8)];
};

export type Redactor = { (s: string): string; readonly active: boolean; hits(s: string): boolean };

/** A redactor for the given values (empty values are ignored). */
export const redactor = (values: readonly string[]): Redactor => {
  const needles = [...new Set(values.filter((v) => v.length > 0).flatMap(forms))];
  const lower = needles.map((n) => n.toLowerCase());
  const hits = (s: string) => {
    if (!needles.length) return false;
    const l = s.toLowerCase();
    return needles.some((n) => s.includes(n)) || lower.some((n) => /^[0-9a-f]+$/.test(n) && l.includes(n));
  };
  return Object.assign((s: string) => (hits(s) ? REDACTED : s), { active: needles.length > 0, hits });
};

/** Redacts every string inside a JSON-like value (log fields). */
export const redactDeep = (r: Redactor, v: unknown): unknown => {
  if (!r.active) return v;
  if (typeof v === 'string') return r(v);
  if (Array.isArray(v)) return v.map((x) => redactDeep(r, x));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, redactDeep(r, x)]));
  return v;
};
