import { CompactedTable, type Applied } from '../log/compacted-table';
import type { Logger } from '../ports/logger';
import { ApiKeyRecordSchema, decodeApiKey, type ApiKeyRecord, type Scope } from '../records/api-key';
import { ValidationError } from '../errors/errors';
import { toHex, timingSafeEqual, utf8 } from '../signing/encoding';

// API keys: `howk_<16 hex id>_<43 base64url chars>` (256 random bits). Only the SHA-256 of
// the whole token is ever stored: the token is random, so a slow password hash would add
// nothing but latency. The id in the token finds the record without a scan.

export { SCOPES, type ApiKeyRecord, type Scope } from '../records/api-key';

/** What may be shown about a key: everything but its hash. */
export type ApiKeyView = Omit<ApiKeyRecord, 'hash'>;
export const keyView = ({ hash: _h, ...v }: ApiKeyRecord): ApiKeyView => v;

const TOKEN = /^howk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

const base64url = (bytes: Uint8Array): string => {
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
};

export const hashToken = async (token: string): Promise<string> => toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', utf8(token) as BufferSource)));

/** The key id a token claims, or null when it is not shaped like a Howk key. */
export const tokenId = (token: string): string | null => TOKEN.exec(token)?.[1] ?? null;

export const EMPTY_CONFIG_IDS = 'config_ids is empty: list at least one config, or leave config_ids out for a key that reaches every config';

export type NewKey = { name?: string; scopes: Scope[]; config_ids?: string[] | null };

/** A fresh key: the token (shown once) and the record to store. */
export const generateKey = async (k: NewKey, now: Date): Promise<{ token: string; record: ApiKeyRecord }> => {
  // An empty list is almost certainly a mistake (a computed list that came out empty): it
  // must not silently become a key that reaches every config. Unbound is config_ids left out.
  if (k.config_ids && !k.config_ids.length) throw new ValidationError(EMPTY_CONFIG_IDS, 'config_ids');
  const id = toHex(crypto.getRandomValues(new Uint8Array(8)));
  const token = `howk_${id}_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
  const record: ApiKeyRecord = {
    id,
    name: k.name ?? '',
    hash: await hashToken(token),
    scopes: [...new Set(k.scopes)],
    config_ids: k.config_ids ? [...new Set(k.config_ids)] : null,
    created_at: now.toISOString(),
    revoked_at: null,
  };
  return { token, record: ApiKeyRecordSchema.parse(record) };
};

/** admin covers every scope; enqueue and read are separate. */
export const grants = (r: Pick<ApiKeyRecord, 'scopes'>, need: Scope): boolean => r.scopes.includes('admin') || r.scopes.includes(need);

/** Whether a key may touch a config (null config: a route that is not about one config). */
export const reaches = (r: Pick<ApiKeyRecord, 'config_ids'>, configId: string | null): boolean => r.config_ids === null || (configId !== null && r.config_ids.includes(configId));

/**
 * The in-memory view of the keys topic on one instance. `apply` takes records in log
 * order; a revoked record stays (so `list` shows it and nothing can resurrect the id).
 */
/** Tokens remembered with their hash after a successful verify (oldest forgotten first). */
const VERIFIED_CACHE = 1024;

export class KeyTable {
  private readonly byId: CompactedTable<ApiKeyRecord>;
  // A producer sends the same token on every request, and hashing it through crypto.subtle
  // cost about a tenth of howk-api's CPU under single enqueues. Only tokens that matched a
  // live record are kept, so a hit needs the exact secret: it tells an attacker nothing, and
  // random tokens cannot fill the cache. Revocation and rotation still apply on every call:
  // the record is looked up and its hash compared each time.
  private readonly verified = new Map<string, string>();

  constructor(log?: Logger) {
    this.byId = new CompactedTable({ topic: 'keys', decode: decodeApiKey, log });
  }

  /** A record in log order; a malformed one leaves the key as it was (core/log/compacted-table.ts). */
  apply(id: string, value: string | null): Applied {
    return this.byId.apply(id, value);
  }

  get(id: string): ApiKeyRecord | undefined {
    return this.byId.get(id);
  }

  list(): ApiKeyRecord[] {
    return [...this.byId.values()].sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  /** The live record a token belongs to, or null (unknown, revoked, or wrong secret). */
  async verify(token: string): Promise<ApiKeyRecord | null> {
    const id = tokenId(token);
    const rec = id ? this.byId.get(id) : undefined;
    // Hash even on a miss so that an unknown id costs the same time as a wrong secret.
    const hash = this.verified.get(token) ?? (await hashToken(token));
    if (!rec || rec.revoked_at !== null) return null;
    if (!timingSafeEqual(utf8(hash), utf8(rec.hash))) return null;
    if (!this.verified.has(token)) {
      if (this.verified.size >= VERIFIED_CACHE) this.verified.delete(this.verified.keys().next().value!);
      this.verified.set(token, hash);
    }
    return rec;
  }
}
