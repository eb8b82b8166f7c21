import { HowkError } from '../errors/errors';
import { fromBase64, toBase64, utf8 } from './encoding';

// Per-request signing secrets are sealed with AES-256-GCM before they reach Kafka or
// Redis. Envelope: `enc:v1:<key id>:<base64 iv>:<base64 ciphertext+tag>`. The key id
// lets an operator rotate HOWK_SECRETS_KEY while older envelopes stay readable.

export class SecretBoxError extends HowkError {
  constructor(message: string) {
    super('secret_box', message);
  }
}

export type SecretBox = {
  seal(plaintext: string): Promise<string>;
  open(envelope: string): Promise<string>;
};

const PREFIX = 'enc:v1:';
const dec = new TextDecoder();

export const isSealed = (s: string): boolean => s.startsWith(PREFIX);

const importAes = async (b64: string): Promise<CryptoKey> => {
  const raw = fromBase64(b64);
  if (raw.length !== 32) throw new SecretBoxError('a secrets key must be 32 bytes, base64-encoded');
  return crypto.subtle.importKey('raw', raw as BufferSource, 'AES-GCM', false, ['encrypt', 'decrypt']);
};

/** `keys` maps key id → base64 key; `currentId` seals. */
export const createSecretBox = async (currentId: string, keys: Record<string, string>): Promise<SecretBox> => {
  const imported = new Map<string, CryptoKey>();
  for (const [id, b64] of Object.entries(keys)) imported.set(id, await importAes(b64));
  const current = imported.get(currentId);
  if (!current) throw new SecretBoxError(`no secrets key with id ${currentId}`);
  return {
    async seal(plaintext) {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, current, utf8(plaintext) as BufferSource));
      return `${PREFIX}${currentId}:${toBase64(iv)}:${toBase64(ct)}`;
    },
    async open(envelope) {
      if (!isSealed(envelope)) throw new SecretBoxError('not a sealed secret');
      const [id, iv, ct] = envelope.slice(PREFIX.length).split(':');
      const key = id ? imported.get(id) : undefined;
      if (!key || !iv || !ct) throw new SecretBoxError(`cannot open secret sealed with key ${id ?? '?'}`);
      try {
        const pt = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: fromBase64(iv) as BufferSource }, key, fromBase64(ct) as BufferSource);
        return dec.decode(pt);
      } catch {
        throw new SecretBoxError('secret envelope failed authentication');
      }
    },
  };
};

/** Builds the box from config: current key plus "id:base64,id:base64" retired keys. */
export const secretBoxFromConfig = async (c: { secrets_key?: string; secrets_key_id: string; old_secrets_keys?: string }): Promise<SecretBox | undefined> => {
  if (!c.secrets_key) return undefined;
  const keys: Record<string, string> = { [c.secrets_key_id]: c.secrets_key };
  for (const pair of (c.old_secrets_keys ?? '').split(',').filter(Boolean)) {
    const i = pair.indexOf(':');
    keys[pair.slice(0, i)] = pair.slice(i + 1);
  }
  return createSecretBox(c.secrets_key_id, keys);
};

export const randomSecretsKey = (): string => toBase64(crypto.getRandomValues(new Uint8Array(32)));
