import { parseSettings, type TransformerSettings } from './settings';

// Transformers (/incoming/:name): what the HTTP route needs to know about a loaded script.
// Where the files come from is the host's business (workers/node/transformers.ts reads
// directories and reloads on SIGHUP, the edge bundles them at build time); this file is
// runtime-agnostic: the script, its settings, and its Basic auth.

export type { TransformerSettings } from './settings';

export const TRANSFORMER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export type PasswdEntry = { kind: 'plain'; secret: string } | { kind: 'bcrypt'; hash: string };

/**
 * Checks a password against a bcrypt hash. Supplied by the host (workers/node/passwords.ts,
 * pure-JS bcryptjs): bcrypt is slow on purpose and has no Web API, so core/ only calls it.
 */
export type HashVerifier = (password: string, hash: string) => Promise<boolean>;

export type TransformerAuth =
  /** No passwd file: the script is public. */
  | { kind: 'none' }
  | { kind: 'passwd'; users: Map<string, PasswdEntry> }
  /** A passwd file exists but could not be read or parsed: every request is refused. */
  | { kind: 'refuse'; reason: string };

export type TransformerScript = {
  name: string;
  code: string;
  settings: TransformerSettings;
  auth: TransformerAuth;
};

export type TransformerRegistry = {
  get(name: string): TransformerScript | undefined;
  /** Every loaded name (GET /transformers); a host that cannot list leaves it out. */
  names?(): string[];
  /** Verifies bcrypt entries; without it a bcrypt entry is refused (never accepted). */
  verifyHash?: HashVerifier;
  /**
   * A secret named by name.json (`verify.secrets`, `basic_auth_secret`): howk-api's process
   * environment, the edge's Worker secrets. Without it every named secret is unset.
   */
  secret?: (name: string) => string | undefined;
};

/** The files of one transformer, read by the host: `json` is name.json's text, `passwd` name.passwd's (null: no file; an Error: unreadable). */
export type TransformerFiles = { name: string; code: string; json?: string | null; passwd?: string | Error | null };

/**
 * A script from its files. A bad name.json throws (the script is not loaded: the message
 * names the key); a passwd file that exists but cannot be read or parsed makes the script
 * refuse every request (`onBadPasswd` hears why).
 */
export const scriptFromFiles = (f: TransformerFiles, onBadPasswd?: (reason: string) => void): TransformerScript => {
  if (!TRANSFORMER_NAME.test(f.name)) throw new Error('the name must be 1-64 characters of A-Z a-z 0-9 _ -');
  let json: unknown = {};
  if (f.json != null) {
    try {
      json = JSON.parse(f.json);
    } catch (e) {
      throw new Error(`${f.name}.json: ${(e as Error).message}`);
    }
  }
  let settings: TransformerSettings;
  try {
    settings = parseSettings(json);
  } catch (e) {
    throw new Error(`${f.name}.json: ${(e as Error).message}`);
  }
  let auth: TransformerAuth = { kind: 'none' };
  if (f.passwd instanceof Error) auth = { kind: 'refuse', reason: f.passwd.message };
  else if (f.passwd != null) {
    try {
      auth = { kind: 'passwd', users: parsePasswd(f.passwd) };
    } catch (e) {
      auth = { kind: 'refuse', reason: (e as Error).message };
    }
  }
  if (auth.kind === 'refuse') onBadPasswd?.(auth.reason);
  return { name: f.name, code: f.code, settings, auth };
};

export const configIdFor = (s: TransformerScript): string => s.settings.config_id ?? `incoming:${s.name}`;

const BCRYPT_PREFIX = /^\$2[abxy]?\$/;
/** Modular crypt format: $2b$<cost>$<22 chars salt><31 chars hash>. */
export const BCRYPT = /^\$2[abxy]?\$(0[4-9]|[12]\d|3[01])\$[./A-Za-z0-9]{53}$/;

/** `user:secret` lines; `#` comments and blank lines ignored. A `$2…` secret is a bcrypt hash. */
export const parsePasswd = (text: string): Map<string, PasswdEntry> => {
  const users = new Map<string, PasswdEntry>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`line ${i + 1}: expected user:password`);
    const user = line.slice(0, colon);
    const secret = line.slice(colon + 1);
    if (BCRYPT_PREFIX.test(secret) && !BCRYPT.test(secret)) throw new Error(`line ${i + 1}: malformed bcrypt hash for ${user}`);
    users.set(user, BCRYPT.test(secret) ? { kind: 'bcrypt', hash: secret } : { kind: 'plain', secret });
  });
  return users;
};

const enc = new TextEncoder();

/** Compares in time that depends on the lengths only, not on where the strings differ. */
export const constantTimeEqual = (a: string, b: string): boolean => {
  const x = enc.encode(a);
  const y = enc.encode(b);
  const n = Math.max(x.length, y.length);
  let diff = x.length ^ y.length;
  for (let i = 0; i < n; i++) diff |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return diff === 0;
};

export type AuthOutcome = { ok: true; user?: string } | { ok: false; message: string };

const BASIC = /^Basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i;

/**
 * Basic auth of a transformer. Plaintext entries compare in constant time; bcrypt entries go
 * to the host's verifier. An unknown user is compared against a dummy of the same kind, so
 * the answer time does not tell which users exist.
 */
export const checkBasicAuth = async (auth: TransformerAuth, header: string | undefined, verifyHash?: HashVerifier): Promise<AuthOutcome> => {
  if (auth.kind === 'none') return { ok: true };
  if (auth.kind === 'refuse') return { ok: false, message: 'this transformer refuses every request: its passwd file could not be read' };
  const m = BASIC.exec(header ?? '');
  if (!m) return { ok: false, message: 'Basic credentials are required' };
  let decoded: string;
  try {
    decoded = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(Uint8Array.from(atob(m[1]!), (ch) => ch.charCodeAt(0)));
  } catch {
    return { ok: false, message: 'malformed Basic credentials' };
  }
  const colon = decoded.indexOf(':');
  if (colon < 0) return { ok: false, message: 'malformed Basic credentials' };
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  const entry = auth.users.get(user);
  let ok: boolean;
  if (entry?.kind === 'bcrypt') {
    if (!verifyHash) return { ok: false, message: 'bcrypt password hashes are not supported on this runtime; use a plaintext entry' };
    ok = await verifyHash(password, entry.hash).catch(() => false);
  } else if (entry === undefined && verifyHash && anyBcrypt(auth)) {
    // A file with bcrypt users: an unknown user costs a bcrypt check too.
    await verifyHash(password, DUMMY_BCRYPT).catch(() => false);
    ok = false;
  } else {
    ok = constantTimeEqual(password, entry?.kind === 'plain' ? entry.secret : '\u0000unknown-user\u0000') && entry !== undefined;
  }
  return ok ? { ok: true, user } : { ok: false, message: 'invalid credentials' };
};

/** A valid cost-10 hash of a random string nobody knows: what an unknown user is checked against. */
const DUMMY_BCRYPT = '$2b$10$n13SVjy2wgLE3YJS7LGI2u0h6F3hHmneKz3ImrtTffOkfiqMhORdS';

const bcryptFiles = new WeakMap<Map<string, PasswdEntry>, boolean>();
const anyBcrypt = (auth: { users: Map<string, PasswdEntry> }): boolean => {
  let v = bcryptFiles.get(auth.users);
  if (v === undefined) bcryptFiles.set(auth.users, (v = [...auth.users.values()].some((u) => u.kind === 'bcrypt')));
  return v;
};
