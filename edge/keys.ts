import type { Redis } from '@upstash/redis/cloudflare';
import { z } from 'zod';
import { keys } from '../core/domain/keys';
import { UnavailableError, errorMessage } from '../core/errors/errors';
import { ApiKeyRecordSchema, KeyTable, hashToken, tokenId, type ApiKeyRecord } from '../core/security/api-keys';
import { timingSafeEqual, utf8 } from '../core/signing/encoding';
import type { KeyVerifier } from '../core/http/deps';
import { GATE_ORIGIN, type GateError, type RateReply, type RateRequest } from './gate/protocol';
import type { DurableObjectNamespace } from './runtime';

// API keys at the edge. howk-api mirrors the key table (hashes, scopes, bindings,
// revocations) into Redis (`howk:keys`, workers/redis/key-mirror.ts); the edge reads a
// token's record there through the bridge, once per `cacheMs` per key id (hits and misses
// alike), so a key revoked on the fleet is refused at the edge within that time, and any
// number of keys works. The Worker secret HOWK_EDGE_API_KEYS (the same records, as a JSON
// array) is a bootstrap: it is consulted only for an id the mirror has no record of.
// Keys are created and revoked on the fleet (howk-api, `howk keys`), never at the edge.

export type EdgeKeyOptions = { redis: Redis | undefined; bootstrap: string | undefined; cacheMs: number; clock: { now(): number } };

type Cached = { record: ApiKeyRecord | null; at: number };

const MAX_CACHED = 10_000;

export const edgeKeyService = (o: EdgeKeyOptions): KeyVerifier => {
  const boot = new KeyTable();
  if (o.bootstrap) for (const r of z.array(ApiKeyRecordSchema).parse(JSON.parse(o.bootstrap))) boot.apply(r.id, JSON.stringify(r));
  const cache = new Map<string, Cached>();
  const reading = new Map<string, Promise<ApiKeyRecord | null>>();

  const read = async (id: string): Promise<ApiKeyRecord | null> => {
    const raw = await o.redis!.hget<string>(keys.apiKeys(), id);
    if (raw === null || raw === undefined) return null;
    const parsed = ApiKeyRecordSchema.safeParse(typeof raw === 'string' ? JSON.parse(raw) : raw);
    // A malformed record is refused rather than trusted.
    return parsed.success && parsed.data.id === id ? parsed.data : null;
  };

  /** The mirror's record of an id (cached), or the bootstrap's when the mirror has none. */
  const recordOf = async (id: string): Promise<ApiKeyRecord | null> => {
    if (!o.redis) return boot.get(id) ?? null;
    const now = o.clock.now();
    const hit = cache.get(id);
    if (hit && now - hit.at < o.cacheMs) return hit.record ?? boot.get(id) ?? null;
    let p = reading.get(id);
    if (!p) {
      p = read(id).finally(() => reading.delete(id));
      reading.set(id, p);
    }
    let record: ApiKeyRecord | null;
    try {
      record = await p;
    } catch (e) {
      // Without the mirror: the last record read, else the bootstrap's; a key known to
      // neither is refused with 503 (retry), never let in.
      const known = hit?.record ?? boot.get(id);
      if (known) return known;
      throw new UnavailableError(`API key table unreachable: ${errorMessage(e)}`, 1);
    }
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(id, { record, at: now });
    return record ?? boot.get(id) ?? null;
  };

  return {
    synced: () => true,
    async verify(token: string) {
      const id = tokenId(token);
      // Hash even for a token of no id, so that every refusal costs the same.
      const hash = await hashToken(token);
      const rec = id ? await recordOf(id) : null;
      if (!rec || rec.revoked_at !== null) return null;
      return timingSafeEqual(utf8(hash), utf8(rec.hash)) ? rec : null;
    },
  };
};

/**
 * api.auth.rate_limit shared by every isolate: each key's bucket lives in a Durable Object
 * of its own (the DomainGate class, named `key:<id>`), stored in its SQLite storage.
 */
export const sharedKeyRate =
  (gates: DurableObjectNamespace, rate: number, burst: number, retryAfterSec: number) =>
  async (keyId: string): Promise<{ ok: true } | { ok: false; retryAfterSec: number }> => {
    if (rate <= 0) return { ok: true };
    let reply: RateReply | GateError;
    try {
      const res = await gates.get(gates.idFromName(`key:${keyId}`)).fetch(`${GATE_ORIGIN}/ratelimit`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ rate, burst } satisfies RateRequest),
      });
      reply = (await res.json()) as RateReply | GateError;
    } catch (e) {
      throw new UnavailableError(`API key rate limiter unreachable: ${errorMessage(e)}`, retryAfterSec);
    }
    if ('error' in reply) throw new UnavailableError(reply.error.message, retryAfterSec);
    return reply.ok ? { ok: true } : { ok: false, retryAfterSec: reply.retry_after };
  };
