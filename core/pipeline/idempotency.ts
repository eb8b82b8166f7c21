import { ConflictError, errorMessage } from '../errors/errors';
import type { EnqueueItem } from '../domain/enqueue';
import type { IdempotencyStore } from '../ports/hot-state';
import type { Logger } from '../ports/logger';
import { toHex } from '../signing/encoding';

// One idempotency for every door (howk-api, howk-dev, the edge): a key is claimed in the one
// shared store with the value `<webhook id> <fingerprint>`, the fingerprint being a hash of
// what the key promises to deliver. A later request with the key and the same request is a
// duplicate of the first webhook; with a different request it is a conflict (409), never a
// silent duplicate. docs/API.md, "Idempotency".

/**
 * SHA-256 (hex) of what a webhook delivers: endpoint, headers (names lower-cased, sorted),
 * content type and body bytes. Not the delivery options (max_attempts, signing_secret): a
 * retry that changes them still means the same webhook.
 */
export const requestFingerprint = async (item: EnqueueItem): Promise<string> => {
  const headers = Object.entries(item.headers)
    .map(([n, v]) => [n.toLowerCase(), v])
    .sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0));
  const body = item.raw ? { content_type: item.raw.content_type, body_base64: item.raw.body_base64 } : { payload: item.payload };
  const canonical = JSON.stringify(['howk-idempotency-v1', item.endpoint, headers, body]);
  return toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonical))));
};

/** The value a claim holds. Claims made before fingerprints (and redrive's) hold the bare id. */
export const claimValue = (webhookId: string, fingerprint: string): string => `${webhookId} ${fingerprint}`;

/** A held claim value → the owner's webhook id and, when it has one, its fingerprint. */
export const ownerOf = (held: string): { id: string; fingerprint?: string } => {
  const at = held.indexOf(' ');
  return at < 0 ? { id: held } : { id: held.slice(0, at), fingerprint: held.slice(at + 1) };
};

export class IdempotencyConflictError extends ConflictError {
  constructor(key: string, owner: string) {
    super(
      'idempotency_key_conflict',
      `idempotency_key ${JSON.stringify(key)} was first used for a different request (webhook ${owner}: another endpoint, headers or body); nothing was enqueued. Send the same request to retry it, or use a new key for a new webhook`,
    );
  }
}

export type KeyedHook = { id: string; key: string; fingerprint: string };

export type ClaimDeps = { store: IdempotencyStore; configId: string; ttlMs: number; log: Logger };

const claimsOf = (configId: string, hooks: KeyedHook[]) => hooks.map((h) => ({ configId, key: h.key, webhookId: claimValue(h.id, h.fingerprint) }));

/** Gives back the claims these hooks made (a failed produce, a refused request). */
export const releaseKeyed = async (d: ClaimDeps, hooks: KeyedHook[]): Promise<void> => {
  if (hooks.length) await d.store.releaseIdempotency(claimsOf(d.configId, hooks)).catch(() => {});
};

/**
 * Claims the hooks' keys: for each hook the id that owns its key (its own id when it is new).
 * Two hooks of one request with the same key: the first wins. A key held for a different
 * request throws IdempotencyConflictError, once the claims this call made are given back.
 * Fails open (every hook new) when the store is unavailable: a duplicate is better than a
 * refused webhook. Returns undefined then, so that a caller with a fallback can use it.
 */
export const claimKeyed = async (d: ClaimDeps, hooks: KeyedHook[]): Promise<Map<string, string> | undefined> => {
  const owners = new Map<string, string>();
  if (!hooks.length) return owners;
  let held: string[];
  try {
    held = await d.store.claimIdempotency(claimsOf(d.configId, hooks), d.ttlMs);
  } catch (e) {
    d.log.warn('idempotency check skipped: hot state unavailable', { error: errorMessage(e) });
    return undefined;
  }
  const first = new Map<string, KeyedHook>();
  const won: KeyedHook[] = [];
  let conflict: IdempotencyConflictError | undefined;
  hooks.forEach((h, i) => {
    const o = ownerOf(held[i]!);
    const mine = o.id === h.id;
    if (mine) won.push(h);
    const earlier = first.get(h.key);
    const owner = earlier ? { id: earlier.id, fingerprint: earlier.fingerprint } : o;
    if (!earlier) first.set(h.key, mine ? h : { ...h, id: o.id, fingerprint: o.fingerprint ?? h.fingerprint });
    if (owner.fingerprint !== undefined && owner.fingerprint !== h.fingerprint) conflict ??= new IdempotencyConflictError(h.key, owner.id);
    owners.set(h.id, owner.id);
  });
  if (conflict) {
    await releaseKeyed(d, won);
    throw conflict;
  }
  return owners;
};
