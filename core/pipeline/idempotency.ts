import { ConflictError, UnavailableError, errorMessage } from '../errors/errors';
import type { Clock } from '../ports/clock';
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

/** Marks a claim whose webhook is not yet acknowledged by Kafka. */
const IN_FLIGHT = '~';

/** A held claim value → the owner's webhook id, its fingerprint when it has one, and whether its webhook is still being produced. */
export const ownerOf = (held: string): { id: string; fingerprint?: string; inFlight: boolean } => {
  const inFlight = held.startsWith(IN_FLIGHT);
  const v = inFlight ? held.slice(1) : held;
  const at = v.indexOf(' ');
  return at < 0 ? { id: v, inFlight } : { id: v.slice(0, at), fingerprint: v.slice(at + 1), inFlight };
};

export class IdempotencyConflictError extends ConflictError {
  constructor(key: string, owner: string) {
    super(
      'idempotency_key_conflict',
      `idempotency_key ${JSON.stringify(key)} was first used for a different request (webhook ${owner}: another endpoint, headers or body); nothing was enqueued. Send the same request to retry it, or use a new key for a new webhook`,
    );
  }
}

/** Another request with the key is still being produced after the wait, or failed during it: the caller retries shortly. */
class KeyInFlightError extends UnavailableError {
  constructor(key: string, failed: boolean) {
    super(
      failed
        ? `the request that held idempotency_key ${JSON.stringify(key)} failed while this one waited for it; nothing was enqueued, retry`
        : `a request with idempotency_key ${JSON.stringify(key)} is in flight; retry shortly`,
      1,
    );
  }
}

export type KeyedHook = { id: string; key: string; fingerprint: string };

export type ClaimDeps = { store: IdempotencyStore; configId: string; ttlMs: number; log: Logger; clock: Clock };

/**
 * How long a claim lives before its webhook is acknowledged: a request that dies between claim
 * and produce frees its key after this, not after the whole idempotency window.
 */
export const IN_FLIGHT_TTL_MS = 60_000;
/** How long a request waits for another request's claim in flight to settle, and how often it looks. */
const WAIT_MS = 3_000;
const POLL_MS = 25;

const inFlightOf = (configId: string, hooks: KeyedHook[]) => hooks.map((h) => ({ configId, key: h.key, webhookId: IN_FLIGHT + claimValue(h.id, h.fingerprint) }));

/** Gives back the claims these hooks made (a failed produce, a refused request). */
export const releaseKeyed = async (d: ClaimDeps, hooks: KeyedHook[]): Promise<void> => {
  if (hooks.length) await d.store.releaseIdempotency(inFlightOf(d.configId, hooks)).catch(() => {});
};

/** Kafka has the hooks' webhooks: their claims become final, for the idempotency window. */
export const commitKeyed = async (d: ClaimDeps, hooks: KeyedHook[]): Promise<void> => {
  if (!hooks.length) return;
  const items = inFlightOf(d.configId, hooks).map((c, i) => ({ ...c, from: c.webhookId, webhookId: claimValue(hooks[i]!.id, hooks[i]!.fingerprint) }));
  // Fail open: the claim in flight still dedupes until it expires.
  await d.store.commitIdempotency(items, d.ttlMs).catch((e) => d.log.warn('idempotency claim not made final: hot state unavailable', { error: errorMessage(e) }));
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The holders of the hooks' keys, claiming the free ones for them. A key held by another
 * request still in flight is asked again until that request settles, for at most WAIT_MS: a
 * duplicate once its webhook is acknowledged, a 503 if it failed (the key is given back). So a
 * copy sent while the first is being produced is never told "duplicate" of a webhook that then fails.
 */
const holders = async (d: ClaimDeps, hooks: KeyedHook[]): Promise<string[]> => {
  const claims = inFlightOf(d.configId, hooks);
  const ttl = Math.min(IN_FLIGHT_TTL_MS, d.ttlMs);
  const held = await d.store.claimIdempotency(claims, ttl);
  const deadline = d.clock.now() + WAIT_MS;
  let waiting = hooks.map((_, i) => i).filter((i) => waitsOn(held[i]!, hooks[i]!, hooks));
  const giveUp = async (key: string, failed: boolean): Promise<never> => {
    await releaseKeyed(
      d,
      hooks.filter((h, i) => ownerOf(held[i]!).id === h.id),
    );
    throw new KeyInFlightError(key, failed);
  };
  while (waiting.length) {
    if (d.clock.now() >= deadline) await giveUp(hooks[waiting[0]!]!.key, false);
    await sleep(POLL_MS);
    const again = await d.store.claimIdempotency(
      waiting.map((i) => claims[i]!),
      ttl,
    );
    waiting.forEach((i, j) => (held[i] = again[j]!));
    // The request we waited for gave the key back (it failed): this copy fails the same way,
    // as promptly, rather than start over; its client's retry makes the webhook.
    const freed = waiting.find((i) => ownerOf(held[i]!).id === hooks[i]!.id);
    if (freed !== undefined) await giveUp(hooks[freed]!.key, true);
    waiting = waiting.filter((i) => waitsOn(held[i]!, hooks[i]!, hooks));
  }
  return held;
};

/** Whether the key is held in flight by another request (not by a hook of this one) for the same request. */
const waitsOn = (held: string, h: KeyedHook, mine: KeyedHook[]): boolean => {
  const o = ownerOf(held);
  return o.inFlight && o.id !== h.id && o.fingerprint === h.fingerprint && !mine.some((m) => m.id === o.id);
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
    held = await holders(d, hooks);
  } catch (e) {
    if (e instanceof KeyInFlightError) throw e;
    d.log.warn('idempotency check skipped: hot state unavailable', { error: errorMessage(e) });
    return undefined;
  }
  const first = new Map<string, { id: string; fingerprint?: string }>();
  const won: KeyedHook[] = [];
  let conflict: IdempotencyConflictError | undefined;
  hooks.forEach((h, i) => {
    const o = ownerOf(held[i]!);
    if (o.id === h.id) won.push(h);
    const owner = first.get(h.key) ?? o;
    if (!first.has(h.key)) first.set(h.key, { id: o.id, fingerprint: o.fingerprint ?? h.fingerprint });
    if (owner.fingerprint !== undefined && owner.fingerprint !== h.fingerprint) conflict ??= new IdempotencyConflictError(h.key, owner.id);
    owners.set(h.id, owner.id);
  });
  if (conflict) {
    await releaseKeyed(d, won);
    throw conflict;
  }
  return owners;
};
