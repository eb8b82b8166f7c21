import { utf8 } from '../encoding';
import { anySignatureMatches, checkTimestamp, concat, hexBytes, utf8Key } from './mac';
import { fail, OK, type Verifier } from './types';

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
  const ok = await anySignatureMatches(secrets, utf8Key, concat(utf8(`${t}.`), req.body), v1.map(hexBytes));
  return ok ? OK : fail('bad_signature', 'no v1 signature matches');
};
