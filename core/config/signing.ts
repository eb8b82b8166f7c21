import { duration, oneOf, optStr, section, str } from './fields';

// How outbound deliveries are signed, and the keys that seal per-config and per-request secrets.

export const signingSection = section({
  scheme: oneOf(['standard', 'howk', 'both'] as const, 'standard', 'Outbound signature headers: Standard Webhooks, HOWK X-Webhook-Signature, or both'),
  default_secret: optStr('Secret used when a webhook has none (whsec_<base64> or raw text); stays in the worker', { secret: true }),
  secrets_key: optStr('Base64 32-byte AES-256-GCM key that encrypts per-request signing secrets', { env: 'HOWK_SECRETS_KEY', secret: true }),
  secrets_key_id: str('k1', 'Id of secrets_key, recorded with each encrypted secret', { env: 'HOWK_SECRETS_KEY_ID' }),
  old_secrets_keys: optStr('Retired keys still able to decrypt: "id:base64,id:base64"', { env: 'HOWK_SECRETS_OLD_KEYS', secret: true }),
  rotation_overlap: duration('24h', 'How long a rotated-out per-config secret still signs deliveries next to the new one'),
});
