import { memoize } from '../domain/memo';
import { InvalidSecretError } from '../errors/errors';
import { toBase64, toHex, utf8 } from './encoding';
import { decodeWhsec, WHSEC_PREFIX } from '../domain/secret-format';
import { hmacSha256, type Hmac } from './hmac';

export type SigningScheme = 'standard' | 'howk' | 'both';

/**
 * Key bytes of a signing secret: Standard Webhooks secrets are `whsec_<base64>` and
 * sign with the decoded bytes; any other secret signs with its UTF-8 bytes.
 */
export const secretKeyBytes = (secret: string): Uint8Array => {
  if (!secret.startsWith(WHSEC_PREFIX)) return utf8(secret);
  const d = decodeWhsec(secret);
  if (!d.ok) throw new InvalidSecretError(`signing secret: ${d.message}`);
  return d.key;
};

// Every delivery signs with one of a few secrets: decode each once (bounded).
const keyOf = memoize(1000, secretKeyBytes);

// A runtime's synchronous HMAC (workers/node/hmac.ts) is used without a promise per signature.
const isSync = (m: Uint8Array | Promise<Uint8Array>): m is Uint8Array => m instanceof Uint8Array;
const all = async (macs: (Uint8Array | Promise<Uint8Array>)[]): Promise<Uint8Array[]> => (macs.every(isSync) ? macs : Promise.all(macs));

/** `<prefix><body>`: text as it is, bytes (a raw body) after the prefix's UTF-8. */
const signed = (prefix: string, body: string | Uint8Array): string | Uint8Array => {
  if (typeof body === 'string') return prefix + body;
  const head = utf8(prefix);
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
};

const standardMacs = (secrets: readonly string[], id: string, timestamp: number, body: string | Uint8Array, hmac: Hmac) => {
  const content = signed(`${id}.${timestamp}.`, body);
  return secrets.map((s) => hmac(keyOf(s), content));
};
const standardValue = (macs: Uint8Array[]): string => {
  let out = '';
  for (let i = 0; i < macs.length; i++) out += `${i ? ' ' : ''}v1,${toBase64(macs[i]!)}`;
  return out;
};
const howkValue = (timestamp: number, mac: Uint8Array): string => `t=${timestamp},v1=${toHex(mac)}`;

/** `webhook-signature` value: one `v1,<base64>` per valid secret, space-separated (rotation). */
export const standardSignature = async (secrets: readonly string[], id: string, timestamp: number, body: string | Uint8Array, hmac: Hmac = hmacSha256): Promise<string> =>
  standardValue(await all(standardMacs(secrets, id, timestamp, body, hmac)));

/** HOWK's `X-Webhook-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<unix>.<body>")>`. */
export const howkSignature = async (secret: string, timestamp: number, body: string | Uint8Array, hmac: Hmac = hmacSha256): Promise<string> =>
  howkValue(timestamp, await hmac(keyOf(secret), signed(`${timestamp}.`, body)));

export type SignInput = {
  id: string;
  attempt: number;
  timestamp: number;
  /** a raw body's bytes, signed as they are */ body: string | Uint8Array;
  secrets: readonly string[];
  scheme: SigningScheme;
  hmac?: Hmac;
};

/**
 * The Howk headers of one outbound attempt (`attempt` is 0-based; the header is 1-based). With
 * a synchronous HMAC (workers/node/hmac.ts) they are returned as they are, without a promise:
 * the worker signs every delivery.
 */
export const signHeaders = (i: SignInput): Record<string, string> | Promise<Record<string, string>> => {
  const ts = String(i.timestamp);
  const h: Record<string, string> = {
    'webhook-id': i.id,
    'webhook-timestamp': ts,
    'x-webhook-id': i.id,
    'x-webhook-attempt': String(i.attempt + 1),
    'x-webhook-timestamp': ts,
  };
  if (i.secrets.length === 0) return h;
  const hmac = i.hmac ?? hmacSha256;
  const macs = i.scheme !== 'howk' ? standardMacs(i.secrets, i.id, i.timestamp, i.body, hmac) : undefined;
  const howk = i.scheme !== 'standard' ? hmac(keyOf(i.secrets[0]!), signed(`${ts}.`, i.body)) : undefined;
  if ((macs === undefined || macs.every(isSync)) && (howk === undefined || isSync(howk)))
    return withSignatures(h, i.timestamp, macs as Uint8Array[] | undefined, howk as Uint8Array | undefined);
  return Promise.all([macs && Promise.all(macs), howk]).then(([m, k]) => withSignatures(h, i.timestamp, m, k));
};

const withSignatures = (h: Record<string, string>, timestamp: number, macs: Uint8Array[] | undefined, howk: Uint8Array | undefined): Record<string, string> => {
  if (macs) h['webhook-signature'] = standardValue(macs);
  if (howk) h['x-webhook-signature'] = howkValue(timestamp, howk);
  return h;
};

/** signHeaders, always as a promise. */
export const signatureHeaders = async (i: SignInput): Promise<Record<string, string>> => signHeaders(i);
