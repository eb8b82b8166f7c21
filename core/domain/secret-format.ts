// Shape of a signing secret. A `whsec_` secret (Standard Webhooks) signs with the bytes its
// base64 decodes to, so it must decode, and to a key long enough to be worth an HMAC:
// `whsec_AA` is a 1-byte key. Standard Webhooks generates 24-64 bytes; 16 bytes (128 bits)
// is the floor accepted here (docs/SECURITY.md). Any other secret signs with its UTF-8 bytes.

export const WHSEC_PREFIX = 'whsec_';
export const MIN_WHSEC_KEY_BYTES = 16;

// Standard base64 with optional padding; atob alone would also take spaces and line breaks.
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Key bytes of `whsec_<base64>`, or a message saying why it is not one. */
export const decodeWhsec = (secret: string): { ok: true; key: Uint8Array } | { ok: false; message: string } => {
  const b64 = secret.slice(WHSEC_PREFIX.length);
  let bin: string;
  try {
    if (!BASE64.test(b64)) throw new Error('not base64');
    bin = atob(b64);
  } catch {
    return { ok: false, message: 'a whsec_ secret must be whsec_ followed by standard base64 (A-Z a-z 0-9 + /, = padding)' };
  }
  if (bin.length < MIN_WHSEC_KEY_BYTES) return { ok: false, message: `a whsec_ secret must decode to at least ${MIN_WHSEC_KEY_BYTES} bytes (this one has ${bin.length})` };
  const key = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) key[i] = bin.charCodeAt(i);
  return { ok: true, key };
};

/** Why `secret` cannot sign; undefined when it can. Only the whsec_ form has a format to break. */
export const signingSecretProblem = (secret: string): string | undefined => {
  if (!secret.startsWith(WHSEC_PREFIX)) return undefined;
  const d = decodeWhsec(secret);
  return d.ok ? undefined : d.message;
};

/**
 * The secrets of one sealed signing secret: an endpoint of the Svix API seals all of its valid
 * secrets (during a rotation, more than one) as one text, whsec_ secrets joined by spaces
 * (core/apps/messages.ts). A whsec_ secret holds no space, so nothing else is ever split.
 */
export const splitSecrets = (opened: string): string[] => (opened.startsWith(WHSEC_PREFIX) && opened.includes(' ') ? opened.split(' ') : [opened]);
