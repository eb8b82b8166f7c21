import { toHex, utf8 } from '../encoding';
import { anySignatureMatches, checkTimestamp, concat, hexBytes, utf8Key } from './mac';
import { fail, type Verifier } from './types';

// Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>…][,v0=…]`, each v1 the hex
// HMAC-SHA256 of "<t>.<body>" keyed by the whole endpoint secret (whsec_… as text).
export const verifyStripe: Verifier = async (req, secrets, toleranceSec) => {
  const h = req.header('stripe-signature');
  if (!h) return fail('missing_header', 'Stripe-Signature is missing');
  let t: string | undefined;
  const v1: string[] = [];
  for (const part of h.split(',')) {
    const i = part.indexOf('=');
    const k = part.slice(0, i).trim();
    const v = part.slice(i + 1).trim();
    if (k === 't' && t === undefined) t = v;
    else if (k === 'v1') v1.push(v);
  }
  if (t === undefined || v1.length === 0) return fail('malformed_header', 'Stripe-Signature needs t= and at least one v1=');
  const stale = checkTimestamp(t, req, toleranceSec);
  if (stale) return stale;
  const signed = concat(utf8(`${t}.`), req.body);
  const ok = await anySignatureMatches(secrets, utf8Key, signed, v1.map(hexBytes));
  if (!ok) return fail('bad_signature', 'no v1 signature matches');
  // The event id sits in the body, which only the script parses; the signed content itself
  // (timestamp and body) names the request instead: a copy is that content again, whichever of
  // its v1 entries it keeps. Stripe's own retries are signed anew (a new t), so they still run.
  const digest = toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', signed as BufferSource)));
  return { ok: true, replay: { id: `stripe:${digest}`, validUntil: (Number(t) + toleranceSec) * 1000 } };
};
