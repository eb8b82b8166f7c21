import { createHmac, timingSafeEqual } from 'node:crypto';

// A Standard Webhooks verifier written from the specification (standardwebhooks.com):
// signed content is `${webhook-id}.${webhook-timestamp}.${body}`, the key is the base64
// part of a `whsec_` secret, `webhook-signature` holds space-separated `v1,<base64>`.
export const verifyStandardWebhook = (
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  body: Buffer | string,
  opts: { toleranceSec?: number; nowSec?: number } = {},
): boolean => {
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  const sigHeader = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof ts !== 'string' || typeof sigHeader !== 'string') return false;
  const now = opts.nowSec ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - Number(ts)) > (opts.toleranceSec ?? 300)) return false;
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, secret.startsWith('whsec_') ? 'base64' : 'utf8');
  const expected = createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest();
  return sigHeader.split(' ').some((part) => {
    const [version, sig] = part.split(',');
    if (version !== 'v1' || !sig) return false;
    const got = Buffer.from(sig, 'base64');
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
};
