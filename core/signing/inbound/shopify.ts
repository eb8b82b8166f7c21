import { anySignatureMatches, base64Bytes, utf8Key } from './mac';
import { fail, OK, type Verifier } from './types';

// Shopify: `X-Shopify-Hmac-Sha256: <base64 HMAC-SHA256(app secret, body)>`. No signed timestamp.
export const verifyShopify: Verifier = async (req, secrets) => {
  const h = req.header('x-shopify-hmac-sha256');
  if (!h) return fail('missing_header', 'X-Shopify-Hmac-Sha256 is missing');
  const ok = await anySignatureMatches(secrets, utf8Key, req.body, [base64Bytes(h)]);
  return ok ? OK : fail('bad_signature', 'signature does not match');
};
