import { fromBase64, timingSafeEqual, utf8 } from '../encoding';
import { hmacSha256 } from '../hmac';
import { fail, type InboundRequest, type VerifyResult } from './types';

// Byte-level helpers shared by the verifiers. Every configured secret is tried against every
// signature the request carries, without stopping at the first match, and each comparison is
// constant-time: how long a check takes says nothing about which part was wrong.

export const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
};

/** Decoded bytes, or null when the text is not valid hex / base64 (a forged header, not a crash). */
export const hexBytes = (s: string): Uint8Array | null => {
  if (s.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(s)) return null;
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(i * 2, i * 2 + 2), 16);
  return out;
};

export const base64Bytes = (s: string): Uint8Array | null => {
  try {
    return fromBase64(s.trim());
  } catch {
    return null;
  }
};

/** True when any (secret, signature) pair matches HMAC-SHA256(key(secret), content). */
export const anySignatureMatches = async (
  secrets: readonly string[],
  keyOf: (secret: string) => Uint8Array,
  content: Uint8Array,
  signatures: readonly (Uint8Array | null)[],
): Promise<boolean> => {
  let matched = false;
  for (const secret of secrets) {
    const expected = await hmacSha256(keyOf(secret), content);
    for (const sig of signatures) matched = timingSafeEqual(expected, sig ?? new Uint8Array(0)) || matched;
  }
  return matched;
};

export const utf8Key = (secret: string): Uint8Array => utf8(secret);

/** A unix-seconds timestamp within `toleranceSec` of now (both ways: a future one is clock trouble or a forgery). */
export const checkTimestamp = (raw: string, req: InboundRequest, toleranceSec: number): VerifyResult | null => {
  if (!/^\d{1,12}$/.test(raw)) return fail('malformed_header', 'timestamp is not a unix time in seconds');
  const age = Math.abs(req.now / 1000 - Number(raw));
  return age > toleranceSec ? fail('stale_timestamp', `timestamp is ${Math.round(age)} s away from now (tolerance ${toleranceSec} s)`) : null;
};
