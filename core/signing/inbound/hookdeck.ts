import { anySignatureMatches, base64Bytes, utf8Key } from './mac';
import { fail, OK, type Verifier } from './types';

// Hookdeck: `x-hookdeck-signature: <base64 HMAC-SHA256(secret, body)>`; while a signing
// secret is being rolled, `x-hookdeck-signature-2` carries the signature of the other
// secret. Either header matching any configured secret passes. No signed timestamp.
export const verifyHookdeck: Verifier = async (req, secrets) => {
  const sigs = [req.header('x-hookdeck-signature'), req.header('x-hookdeck-signature-2')].filter((s): s is string => !!s);
  if (!sigs.length) return fail('missing_header', 'x-hookdeck-signature is missing');
  const ok = await anySignatureMatches(secrets, utf8Key, req.body, sigs.map(base64Bytes));
  return ok ? OK : fail('bad_signature', 'signature does not match');
};
