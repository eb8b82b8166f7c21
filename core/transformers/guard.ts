import { memoize } from '../domain/memo';
import { inboundRequest, verifyInbound, type VerifyResult } from '../signing/inbound';
import { parsePasswd, type PasswdEntry, type TransformerAuth, type TransformerRegistry, type TransformerScript } from './registry';

// What stands before a transformer runs: its Basic auth (name.passwd, plus the users of the
// secret `basic_auth_secret` names) and its provider's signature (`verify`). Secrets are read
// by name from the runtime (TransformerRegistry.secret) on every request, so a rotated Worker
// secret or restarted process applies without reloading the scripts; a secret that is named
// but unset never opens anything.

type SecretOf = TransformerRegistry['secret'];

// Parsed passwd secrets, by text: parsing is cheap but a bcrypt-heavy sender posts often.
const passwdOf = memoize(64, (text: string): Map<string, PasswdEntry> | Error => {
  try {
    return parsePasswd(text);
  } catch (e) {
    return e as Error;
  }
});

const merged = new WeakMap<Map<string, PasswdEntry>, WeakMap<Map<string, PasswdEntry>, Map<string, PasswdEntry>>>();
/** One stable map per (file, secret) pair, so that per-map caches (anyBcrypt) keep working. */
const mergeUsers = (file: Map<string, PasswdEntry>, secret: Map<string, PasswdEntry>): Map<string, PasswdEntry> => {
  let bySecret = merged.get(file);
  if (!bySecret) merged.set(file, (bySecret = new WeakMap()));
  let m = bySecret.get(secret);
  if (!m) bySecret.set(secret, (m = new Map([...file, ...secret])));
  return m;
};

const NO_USERS = new Map<string, PasswdEntry>();

/** The Basic auth of a script for this request: the file's users and the secret's (the secret's win). */
export const authOf = (script: TransformerScript, secret: SecretOf): TransformerAuth => {
  const name = script.settings.basic_auth_secret;
  if (!name || script.auth.kind === 'refuse') return script.auth;
  const text = secret?.(name);
  if (!text) return { kind: 'refuse', reason: `basic_auth_secret ${name} is not set` };
  const users = passwdOf(text);
  if (users instanceof Error) return { kind: 'refuse', reason: `basic_auth_secret ${name}: ${users.message}` };
  return { kind: 'passwd', users: mergeUsers(script.auth.kind === 'passwd' ? script.auth.users : NO_USERS, users) };
};

/** The provider's signature over the raw body, against every secret `verify.secrets` names (unset ones skipped; none set refuses). */
export const checkSignature = async (script: TransformerScript, secret: SecretOf, headers: Headers, body: Uint8Array, now: number): Promise<VerifyResult> => {
  const v = script.settings.verify;
  if (!v) return { ok: true };
  const secrets = v.secrets.map((n) => secret?.(n) ?? '').filter((s) => s.length > 0);
  return verifyInbound({ provider: v.provider, secrets, toleranceSec: v.tolerance }, inboundRequest(headers, body, now));
};
