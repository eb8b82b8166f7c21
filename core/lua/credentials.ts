import { HowkError } from '../errors/errors';
import { fromBase64, toBase64, utf8 } from '../signing/encoding';

// Credentials for crypto.decrypt_credential(name). The operator keeps AES-256-GCM keys in
// HOWK_LUA_CRYPTO_<ID> variables and the encrypted credentials in config (lua.credentials):
//
//   lcred:v1:<ID>:<base64 12-byte iv>:<base64 ciphertext + 16-byte tag>
//
// The additional authenticated data is `howk-lua-credential:<name>`: an envelope only opens
// under the name it was made for, so moving ciphertext between names fails authentication.
// Keys are imported as non-extractable CryptoKeys; neither they nor the env values are ever
// handed to Lua, written to a log or sent to Kafka. Several ids may be set at once (rotation).

export const CREDENTIAL_PREFIX = 'lcred:v1:';
export const CREDENTIAL_KEY_ENV = 'HOWK_LUA_CRYPTO_';
const KEY_ID = /^[A-Za-z0-9_]{1,64}$/;
export const CREDENTIAL_NAME = /^[A-Za-z0-9_.:-]{1,128}$/;

export class CredentialError extends HowkError {
  constructor(message: string) {
    super('credential', message);
  }
}

const aad = (name: string) => utf8(`howk-lua-credential:${name}`) as BufferSource;

export const importCredentialKey = async (id: string, b64: string): Promise<CryptoKey> => {
  let raw: Uint8Array;
  try {
    raw = fromBase64(b64.trim());
  } catch {
    raw = new Uint8Array(0);
  }
  // The message names the variable, never its value.
  if (raw.length !== 32) throw new CredentialError(`${CREDENTIAL_KEY_ENV}${id} must be a base64-encoded 32-byte key`);
  return crypto.subtle.importKey('raw', raw as BufferSource, 'AES-GCM', false, ['encrypt', 'decrypt']);
};

/** Every HOWK_LUA_CRYPTO_<ID> of an environment, imported (id → key). */
export const credentialKeysFromEnv = async (env: Record<string, string | undefined>): Promise<Map<string, CryptoKey>> => {
  const keys = new Map<string, CryptoKey>();
  for (const [k, v] of Object.entries(env)) {
    if (!k.startsWith(CREDENTIAL_KEY_ENV) || !v) continue;
    const id = k.slice(CREDENTIAL_KEY_ENV.length);
    if (!KEY_ID.test(id)) throw new CredentialError(`${k}: the key id must be 1-64 characters of A-Z a-z 0-9 _`);
    keys.set(id, await importCredentialKey(id, v));
  }
  return keys;
};

export const encryptCredential = async (keyId: string, key: CryptoKey, name: string, plaintext: string): Promise<string> => {
  if (!KEY_ID.test(keyId)) throw new CredentialError('the key id must be 1-64 characters of A-Z a-z 0-9 _');
  if (!CREDENTIAL_NAME.test(name)) throw new CredentialError('a credential name must be 1-128 characters of A-Z a-z 0-9 _ . : -');
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: aad(name) }, key, utf8(plaintext) as BufferSource));
  return `${CREDENTIAL_PREFIX}${keyId}:${toBase64(iv)}:${toBase64(ct)}`;
};

const dec = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export const decryptCredential = async (keys: ReadonlyMap<string, CryptoKey>, name: string, envelope: string): Promise<string> => {
  if (!envelope.startsWith(CREDENTIAL_PREFIX)) throw new CredentialError(`credential ${name} is not an ${CREDENTIAL_PREFIX} envelope`);
  const [id, iv, ct, extra] = envelope.slice(CREDENTIAL_PREFIX.length).split(':');
  if (!id || !iv || !ct || extra !== undefined) throw new CredentialError(`credential ${name} is not an ${CREDENTIAL_PREFIX} envelope`);
  const key = keys.get(id);
  if (!key) throw new CredentialError(`credential ${name} needs key ${id} (${CREDENTIAL_KEY_ENV}${id} is not set)`);
  try {
    const pt = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: fromBase64(iv) as BufferSource, additionalData: aad(name) }, key, fromBase64(ct) as BufferSource);
    return dec.decode(pt);
  } catch {
    throw new CredentialError(`credential ${name} failed authentication (wrong key, altered, or made for another name)`);
  }
};

/** The decrypter behind crypto.decrypt_credential: null for an unknown name, an error for a bad envelope. */
export const credentialStore = (keys: ReadonlyMap<string, CryptoKey>, envelopes: Readonly<Record<string, string>>) => async (name: string): Promise<string | null> => {
  const envelope = Object.hasOwn(envelopes, name) ? envelopes[name] : undefined;
  if (envelope === undefined) return null;
  return decryptCredential(keys, name, envelope);
};
