import { HowkError } from '../errors/errors';
import { fromBase64, toBase64, utf8 } from '../signing/encoding';
import { hostAllowed } from './http';

// Credentials for crypto.decrypt_credential(name). The operator keeps AES-256-GCM keys in
// HOWK_LUA_CRYPTO_<ID> variables and the encrypted credentials in config (lua.credentials):
//
//   lcred:v2:<ID>:<base64url scope JSON>:<base64 12-byte iv>:<base64 ciphertext + 16-byte tag>
//
// The scope `{"namespaces": [...], "hosts": [...]}` says which script namespaces may open
// the credential and to which hosts a request that used it may go. The additional
// authenticated data is `howk-lua-credential:v2:<name>:<scope>`: an envelope only opens under
// the name and the scope it was made with, so neither moving ciphertext between names nor
// widening its scope in config works. Keys are imported as non-extractable CryptoKeys;
// neither they nor the env values are ever handed to Lua, written to a log or sent to Kafka.
// Unscoped `lcred:v1:` envelopes (older releases) are refused with a message saying how to
// re-encrypt them.

export const CREDENTIAL_PREFIX = 'lcred:v2:';
export const CREDENTIAL_V1_PREFIX = 'lcred:v1:';
export const CREDENTIAL_KEY_ENV = 'HOWK_LUA_CRYPTO_';
const KEY_ID = /^[A-Za-z0-9_]{1,64}$/;
export const CREDENTIAL_NAME = /^[A-Za-z0-9_.:-]{1,128}$/;
/** A namespace pattern: `*`, a config id / `incoming:<name>` (exactly), or `<ns>:*` (its descendants). */
const NAMESPACE = /^(\*|[A-Za-z0-9._:-]{1,128}(:\*)?)$/;
const HOST = /^(\*\.)?[A-Za-z0-9._-]{1,253}$|^[0-9a-fA-F:]{2,39}$/;

export type CredentialScope = { namespaces: string[]; hosts: string[] };

export class CredentialError extends HowkError {
  constructor(message: string) {
    super('credential', message);
  }
}

const aad = (name: string, scope: string) => utf8(`howk-lua-credential:v2:${name}:${scope}`) as BufferSource;
const b64url = (s: string) => toBase64(utf8(s)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const fromB64url = (s: string) => new TextDecoder().decode(fromBase64(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4)));

/** Checks a scope; the message names the bad entry. */
export const checkScope = (s: CredentialScope): CredentialScope => {
  if (!s.namespaces.length) throw new CredentialError('a credential needs at least one namespace (e.g. --namespaces wh,wh:*)');
  if (!s.hosts.length) throw new CredentialError('a credential needs at least one destination host (e.g. --hosts api.partner.com)');
  for (const n of s.namespaces) if (!NAMESPACE.test(n)) throw new CredentialError(`invalid namespace pattern ${JSON.stringify(n)}: use a config id, <id>:* or *`);
  for (const h of s.hosts) if (!HOST.test(h)) throw new CredentialError(`invalid host ${JSON.stringify(h)}: use a host name or *.domain (no scheme, port or path)`);
  return { namespaces: [...new Set(s.namespaces)], hosts: [...new Set(s.hosts.map((h) => h.toLowerCase()))] };
};

/**
 * Whether a script running for `namespace` may open a credential of this scope: a pattern
 * `wh` allows exactly `wh`; `wh:*` allows every id below it (`wh:42`, `wh:42:6`), not `wh`
 * itself; `*` allows every namespace.
 */
export const namespaceAllowed = (namespace: string, patterns: readonly string[]): boolean =>
  patterns.some((p) => p === '*' || p === namespace || (p.endsWith(':*') && namespace.startsWith(p.slice(0, -1)) && namespace.length > p.length - 1));

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

export const encryptCredential = async (keyId: string, key: CryptoKey, name: string, plaintext: string, scope: CredentialScope): Promise<string> => {
  if (!KEY_ID.test(keyId)) throw new CredentialError('the key id must be 1-64 characters of A-Z a-z 0-9 _');
  if (!CREDENTIAL_NAME.test(name)) throw new CredentialError('a credential name must be 1-128 characters of A-Z a-z 0-9 _ . : -');
  const s = checkScope(scope);
  const encoded = b64url(JSON.stringify({ namespaces: s.namespaces, hosts: s.hosts }));
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: aad(name, encoded) }, key, utf8(plaintext) as BufferSource));
  return `${CREDENTIAL_PREFIX}${keyId}:${encoded}:${toBase64(iv)}:${toBase64(ct)}`;
};

type Parsed = { keyId: string; scope: CredentialScope; encodedScope: string; iv: string; ct: string };

const V1_MESSAGE = (name: string) =>
  `credential ${name} is an unscoped lcred:v1 envelope: re-encrypt it with \`howk credentials encrypt --name ${name} --key-id ID --namespaces ... --hosts ...\``;

/** The parts of an envelope, without opening it (the scope is readable: it is not secret). */
export const parseEnvelope = (name: string, envelope: string): Parsed => {
  if (envelope.startsWith(CREDENTIAL_V1_PREFIX)) throw new CredentialError(V1_MESSAGE(name));
  const bad = () => new CredentialError(`credential ${name} is not an ${CREDENTIAL_PREFIX} envelope`);
  if (!envelope.startsWith(CREDENTIAL_PREFIX)) throw bad();
  const [keyId, encodedScope, iv, ct, extra] = envelope.slice(CREDENTIAL_PREFIX.length).split(':');
  if (!keyId || !encodedScope || !iv || !ct || extra !== undefined) throw bad();
  let scope: CredentialScope;
  try {
    const v = JSON.parse(fromB64url(encodedScope)) as { namespaces?: unknown; hosts?: unknown };
    const strings = (x: unknown) => (Array.isArray(x) && x.every((e) => typeof e === 'string') ? (x as string[]) : []);
    scope = checkScope({ namespaces: strings(v.namespaces), hosts: strings(v.hosts) });
  } catch {
    throw bad();
  }
  return { keyId, scope, encodedScope, iv, ct };
};

const dec = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export const decryptCredential = async (keys: ReadonlyMap<string, CryptoKey>, name: string, envelope: string): Promise<string> => {
  const p = parseEnvelope(name, envelope);
  const key = keys.get(p.keyId);
  if (!key) throw new CredentialError(`credential ${name} needs key ${p.keyId} (${CREDENTIAL_KEY_ENV}${p.keyId} is not set)`);
  try {
    const pt = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: fromBase64(p.iv) as BufferSource, additionalData: aad(name, p.encodedScope) },
      key,
      fromBase64(p.ct) as BufferSource,
    );
    return dec.decode(pt);
  } catch {
    throw new CredentialError(`credential ${name} failed authentication (wrong key, altered, or made for another name or scope)`);
  }
};

/** One credential a run opened: what the request that carries it may do. */
export type CredentialUse = { name: string; hosts: readonly string[]; plaintext: string };

/**
 * The credentials of one script run. `decrypt` (behind crypto.decrypt_credential) refuses a
 * credential whose scope does not include the run's namespace and records every plaintext
 * it hands out, so that the host can check destinations (`hostRefusal`) and redact outputs.
 */
export type CredentialSession = {
  decrypt(name: string): Promise<string | null>;
  readonly used: readonly CredentialUse[];
  /** The first used credential that may not go to `host`, or undefined when all may. */
  hostRefusal(host: string): CredentialUse | undefined;
};

export const credentialSession = (keys: ReadonlyMap<string, CryptoKey>, envelopes: Readonly<Record<string, string>>, namespace: string): CredentialSession => {
  const used: CredentialUse[] = [];
  return {
    used,
    async decrypt(name) {
      const envelope = Object.hasOwn(envelopes, name) ? envelopes[name] : undefined;
      if (envelope === undefined) return null;
      const { scope } = parseEnvelope(name, envelope);
      if (!namespaceAllowed(namespace, scope.namespaces)) throw new CredentialError(`credential ${name} is not available to namespace ${namespace}`);
      const plaintext = await decryptCredential(keys, name, envelope);
      used.push({ name, hosts: scope.hosts, plaintext });
      return plaintext;
    },
    hostRefusal: (host) => used.find((u) => !hostAllowed(host.replace(/^\[|\]$/g, ''), u.hosts)),
  };
};
