// ULIDs (Crockford base32: 48-bit ms timestamp + 80 random bits), monotonic within a
// millisecond so that ids made in one burst still sort in creation order.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

const CODES = Array.from(ALPHABET, (c) => c.charCodeAt(0));

let lastTime = -1;
/** encodeTime(lastTime): the ids of one millisecond (a batch) share it. */
let lastTimeText = '';
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

/** 40 bits (a number below 2^40) → 8 characters of 5 bits each, most significant first. */
const encode40 = (n: number): string => {
  const hi = Math.floor(n / 2 ** 20);
  const lo = n % 2 ** 20;
  return String.fromCharCode(
    CODES[hi >>> 15]!,
    CODES[(hi >>> 10) & 31]!,
    CODES[(hi >>> 5) & 31]!,
    CODES[hi & 31]!,
    CODES[lo >>> 15]!,
    CODES[(lo >>> 10) & 31]!,
    CODES[(lo >>> 5) & 31]!,
    CODES[lo & 31]!,
  );
};

// 80 bits → 16 characters: two 40-bit halves, each one string built at once (a character at a
// time was most of what an id cost).
const encodeRandom = (b: Uint8Array): string =>
  encode40(b[0]! * 2 ** 32 + (((b[1]! << 24) | (b[2]! << 16) | (b[3]! << 8) | b[4]!) >>> 0)) +
  encode40(b[5]! * 2 ** 32 + (((b[6]! << 24) | (b[7]! << 16) | (b[8]! << 8) | b[9]!) >>> 0));

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
    lastTimeText = encodeTime(now);
    crypto.getRandomValues(lastRandom);
  }
  return lastTimeText + encodeRandom(lastRandom);
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
