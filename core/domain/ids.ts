// ULIDs (Crockford base32: 48-bit ms timestamp + 80 random bits), monotonic within a
// millisecond so that ids made in one burst still sort in creation order.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

let lastTime = -1;
const lastRandom = new Uint8Array(10);

const encodeTime = (time: number): string => {
  let out = '';
  let t = time;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out;
};

const encodeRandom = (bytes: Uint8Array): string => {
  // 80 bits → 16 chars of 5 bits each.
  let out = '';
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(acc >> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  return out;
};

const increment = (bytes: Uint8Array): void => {
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i] !== 255) {
      bytes[i]! += 1;
      return;
    }
    bytes[i] = 0;
  }
};

export const ulid = (now: number = Date.now()): string => {
  if (now <= lastTime) {
    increment(lastRandom);
  } else {
    lastTime = now;
    crypto.getRandomValues(lastRandom);
  }
  return encodeTime(lastTime) + encodeRandom(lastRandom);
};

export const webhookId = (now?: number): string => `wh_${ulid(now)}`;

export const isWebhookId = (s: string): boolean => /^wh_[0-9A-HJKMNP-TV-Z]{26}$/.test(s);

const hex = (buf: ArrayBuffer): string => {
  const b = new Uint8Array(buf);
  let s = '';
  for (const x of b) s += x.toString(16).padStart(2, '0');
  return s;
};

/** endpoint_hash: the first 16 bytes of sha256(endpoint), hex (HOWK compatible). */
export const endpointHash = async (endpoint: string): Promise<string> => hex(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(endpoint))).slice(0, 32);
