import { fromBase64, utf8 } from '../encoding';
import { anySignatureMatches, base64Bytes, checkTimestamp, concat } from './mac';
import { fail, type Verifier } from './types';

// Standard Webhooks (and Svix, the same scheme under svix-* names): HMAC-SHA256 of
// "<id>.<timestamp>.<body>" keyed by the base64 part of a whsec_ secret (a secret without
// the prefix signs with its UTF-8 bytes, as Howk's own outbound signing does), sent as
// space-separated `v1,<base64>` entries, one per secret during a rotation.
const standardWith =
  (prefix: 'webhook' | 'svix'): Verifier =>
  async (req, secrets, toleranceSec) => {
    const id = req.header(`${prefix}-id`);
    const ts = req.header(`${prefix}-timestamp`);
    const sig = req.header(`${prefix}-signature`);
    if (!id || !ts || !sig) return fail('missing_header', `${prefix}-id, ${prefix}-timestamp and ${prefix}-signature are required`);
    const stale = checkTimestamp(ts, req, toleranceSec);
    if (stale) return stale;
    const v1 = sig
      .split(' ')
      .filter((p) => p.startsWith('v1,'))
      .map((p) => base64Bytes(p.slice(3)));
    if (!v1.length) return fail('malformed_header', `${prefix}-signature has no v1 entry`);
    // Lenient on purpose: a sender's secret is checked by the sender, not here (a short whsec_
    // key still verifies what it signed; outbound signing refuses one).
    const keyOf = (secret: string) => {
      try {
        return secret.startsWith('whsec_') ? fromBase64(secret.slice(6)) : utf8(secret);
      } catch {
        return utf8(secret);
      }
    };
    const ok = await anySignatureMatches(secrets, keyOf, concat(utf8(`${id}.${ts}.`), req.body), v1);
    if (!ok) return fail('bad_signature', 'no v1 signature matches');
    // The message id is signed and stays the same across the sender's own retries (the spec's
    // idempotency key): a retry within the window is answered like a copy, which is what it is.
    return { ok: true, replay: { id: `${prefix}:${id}`, validUntil: (Number(ts) + toleranceSec) * 1000 } };
  };

export const verifyStandard = standardWith('webhook');
export const verifySvix = standardWith('svix');
