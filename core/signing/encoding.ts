// Byte helpers on Web APIs only (core/ has no Buffer).
const enc = new TextEncoder();

export const utf8 = (s: string): Uint8Array => enc.encode(s);

export const toBase64 = (bytes: Uint8Array): string => {
  // One signature (32 bytes) is the common case: no subarray copy nor spread for it.
  if (bytes.length <= 64) {
    let bin = '';
    for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]!);
    return btoa(bin);
  }
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
};

export const fromBase64 = (b64: string): Uint8Array => {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
};

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

export const toHex = (bytes: Uint8Array): string => {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]!]!;
  return s;
};

/** Constant-time comparison of two byte strings of any length. */
export const timingSafeEqual = (a: Uint8Array, b: Uint8Array): boolean => {
  let diff = a.length ^ b.length;
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) diff |= (a[i % (a.length || 1)] ?? 0) ^ (b[i % (b.length || 1)] ?? 0);
  return diff === 0;
};
