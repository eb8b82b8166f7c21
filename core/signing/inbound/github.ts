import { anySignatureMatches, hexBytes, utf8Key } from './mac';
import { fail, OK, type Verifier } from './types';

// GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`. No timestamp: replay
// protection is the delivery id (X-GitHub-Delivery), which a transformer can dedupe on.
export const verifyGithub: Verifier = async (req, secrets) => {
  const h = req.header('x-hub-signature-256');
  if (!h) return fail('missing_header', 'X-Hub-Signature-256 is missing');
  if (!h.startsWith('sha256=')) return fail('malformed_header', 'X-Hub-Signature-256 must start with sha256=');
  const ok = await anySignatureMatches(secrets, utf8Key, req.body, [hexBytes(h.slice(7))]);
  return ok ? OK : fail('bad_signature', 'signature does not match');
};
