import { ValidationError } from '../errors/errors';
import { timingSafeEqual, utf8 } from '../signing/encoding';
import { verifyStandard } from '../signing/inbound/standard';
import { DEFAULT_TOLERANCE_SEC, type VerifyResult } from '../signing/inbound/types';
import { howkSignature, signatureHeaders } from '../signing/outbound';
import { LAB_EPOCH } from './state';

// The signed-payload demo: a payload signed exactly as a Howk worker signs an outbound
// attempt (core/signing/outbound.ts, both schemes), checked as a receiver checks it
// (core/signing/inbound/standard.ts, and the HOWK header recomputed). Change one character
// of the body and both fail. WebCrypto only, so it runs in a browser too.

/** Public on purpose: it protects nothing and exists so the arithmetic can be shown. */
export const DEMO_SECRET = 'lab-demo-key-not-a-secret';
export const DEMO_WEBHOOK_ID = 'wh-0001';
/** Fixed, so the demo's signatures are the same on every run. */
export const DEMO_TIMESTAMP = Math.floor(LAB_EPOCH / 1000);
export const DEMO_PAYLOAD = JSON.stringify({
  id: 'evt-0001',
  type: 'order.created',
  occurred_at: new Date(LAB_EPOCH).toISOString(),
  data: { order_id: 'ORD-10001', amount: 4200, currency: 'EUR' },
});

export type SignedDemo = {
  id: string;
  timestamp: number;
  body: string;
  secret: string;
  /** What each scheme's HMAC-SHA256 covers. */
  signed: { standard: string; howk: string };
  /** The headers of the attempt: webhook-id, webhook-timestamp, webhook-signature, x-webhook-signature, … */
  headers: Record<string, string>;
};

export const signDemo = async (body: string = DEMO_PAYLOAD, o: { secret?: string; id?: string; timestamp?: number } = {}): Promise<SignedDemo> => {
  const secret = o.secret ?? DEMO_SECRET;
  const id = o.id ?? DEMO_WEBHOOK_ID;
  const timestamp = o.timestamp ?? DEMO_TIMESTAMP;
  const headers = await signatureHeaders({ id, attempt: 0, timestamp, body, secrets: [secret], scheme: 'both' });
  return { id, timestamp, body, secret, signed: { standard: `${id}.${timestamp}.${body}`, howk: `${timestamp}.${body}` }, headers };
};

export type DemoVerification = { ok: boolean; standard: VerifyResult; howk: VerifyResult };

/** Checks `received` (the body as it arrived) against the headers of `signed`, at `nowMs`. */
export const verifyDemo = async (signed: SignedDemo, received: string, nowMs: number = signed.timestamp * 1000): Promise<DemoVerification> => {
  const header = (name: string) => signed.headers[name.toLowerCase()] ?? null;
  const standard = await verifyStandard({ header, body: utf8(received), now: nowMs }, [signed.secret], DEFAULT_TOLERANCE_SEC);
  const expected = await howkSignature(signed.secret, signed.timestamp, received);
  const stale = Math.abs(nowMs / 1000 - signed.timestamp) > DEFAULT_TOLERANCE_SEC;
  const howk: VerifyResult = stale
    ? { ok: false, reason: 'stale_timestamp', detail: `timestamp is more than ${DEFAULT_TOLERANCE_SEC} s away from now` }
    : timingSafeEqual(utf8(expected), utf8(header('x-webhook-signature') ?? ''))
      ? { ok: true }
      : { ok: false, reason: 'bad_signature', detail: 'the v1 signature does not match the body' };
  return { ok: standard.ok && howk.ok, standard, howk };
};

const NEXT: Record<string, string> = { '9': '0', z: 'a', Z: 'A' };

/** `text` with the character at `index` replaced by a different one (a digit by the next digit, a letter by the next letter). */
export const changeOneCharacter = (text: string, index: number): string => {
  if (!Number.isInteger(index) || index < 0 || index >= text.length) throw new ValidationError(`index must be an integer from 0 to ${text.length - 1}`, 'index');
  const ch = text[index]!;
  const next = NEXT[ch] ?? (/[0-9A-Za-y]/.test(ch) ? String.fromCharCode(ch.charCodeAt(0) + 1) : ch === ' ' ? '_' : ' ');
  return text.slice(0, index) + next + text.slice(index + 1);
};
