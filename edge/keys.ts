import type { Redis } from '@upstash/redis/cloudflare';
import { z } from 'zod';
import { keys } from '../core/domain/keys';
import { KeyCheckUnavailableError, RateLimitedError, UnavailableError, errorMessage } from '../core/errors/errors';
import type { Logger } from '../core/ports/logger';
import { createRateLimiter } from '../core/security/rate-limit';
import { ApiKeyRecordSchema, decodeApiKey, encodeApiKey } from '../core/records/api-key';
import { KeyTable, hashToken, tokenId, type ApiKeyRecord } from '../core/security/api-keys';
import { timingSafeEqual, utf8 } from '../core/signing/encoding';
import type { KeyVerifier } from '../core/http/deps';
import { GATE_ORIGIN, type GateError, type RateReply, type RateRequest } from './gate/protocol';
import type { DurableObjectNamespace } from './runtime';

// API keys at the edge. howk-api mirrors the key table (hashes, scopes, bindings,
// revocations) into Redis (`howk:keys`, workers/redis/key-mirror.ts); the edge reads a
// token's record there through the bridge and keeps it `cacheMs` (a record, revoked or not)
// or `missCacheMs` (no record), in two bounded caches so that a flood of unknown ids never
// pushes out the records of real keys. The mirror is the only authority once it is
// configured, and the check fails closed: when it cannot be read, only a record read within
// its cache time counts, and any other key gets 503 (KeyCheckUnavailableError), whatever the
// Worker secret HOWK_EDGE_API_KEYS says (a list that cannot learn of a revocation). That
// list serves an edge without a mirror (no Redis REST endpoint) and is ignored otherwise.
// Lookups that would reach the bridge are limited per client (`lookups`), so a stranger
// sending random ids is refused (429) before he can spend the bridge's shared rate.
// Keys are created and revoked on the fleet (howk-api, `howk keys`), never at the edge.

export type EdgeKeyOptions = {
  redis: Redis | undefined;
  bootstrap: string | undefined;
  cacheMs: number;
  /** How long an id the mirror has no record of stays refused without a read (at most cacheMs). */
  missCacheMs: number;
  /** Reads of the mirror per client: rate per second, burst (rate 0: no limit). */
  lookups: { rate: number; burst: number };
  retryAfterSec: number;
  clock: { now(): number };
  log?: Logger;
};

const MAX_CACHED = 10_000;

/** Sets an entry of a bounded cache: when it is full, the oldest entry goes first. */
const boundedSet = <V>(map: Map<string, V>, id: string, v: V) => {
  map.delete(id);
  if (map.size >= MAX_CACHED) map.delete(map.keys().next().value!);
  map.set(id, v);
};

export const edgeKeyService = (o: EdgeKeyOptions): KeyVerifier => {
  const boot = new KeyTable();
  if (o.bootstrap && !o.redis) for (const r of z.array(ApiKeyRecordSchema).parse(JSON.parse(o.bootstrap))) boot.apply(r.id, encodeApiKey(r));
  if (o.bootstrap && o.redis) o.log?.warn('HOWK_EDGE_API_KEYS is ignored: the key mirror (HOWK_EDGE_REDIS_REST_URL) is the only source of API keys at this edge');
  const found = new Map<string, { record: ApiKeyRecord; at: number }>();
  const missing = new Map<string, number>();
  const reading = new Map<string, Promise<ApiKeyRecord | null>>();
  const lookups = createRateLimiter(o.lookups.rate, o.lookups.burst);
  const missMs = Math.min(o.missCacheMs, o.cacheMs);

  const read = async (id: string): Promise<ApiKeyRecord | null> => {
    const raw = await o.redis!.hget<string>(keys.apiKeys(), id);
    if (raw === null || raw === undefined) return null;
    // A malformed record is refused rather than trusted.
    return decodeApiKey(id, typeof raw === 'string' ? raw : JSON.stringify(raw)) ?? null;
  };

  /** The mirror's record of an id: from a cache within its time, else read (limited per client). */
  const recordOf = async (id: string, client: string): Promise<ApiKeyRecord | null> => {
    if (!o.redis) return boot.get(id) ?? null;
    const now = o.clock.now();
    const hit = found.get(id);
    if (hit && now - hit.at < o.cacheMs) return hit.record;
    const miss = missing.get(id);
    if (miss !== undefined && now - miss < missMs) return null;
    let p = reading.get(id);
    if (!p) {
      const rl = lookups(client, now);
      if (!rl.ok) throw new RateLimitedError(`too many API key lookups from this client (edge.key_lookup_rate: ${o.lookups.rate} per second)`, rl.retryAfterSec);
      p = read(id).finally(() => reading.delete(id));
      reading.set(id, p);
    }
    let record: ApiKeyRecord | null;
    try {
      record = await p;
    } catch (e) {
      // Fail closed: neither an expired record (it may have been revoked since) nor the
      // bootstrap list stands in for the mirror.
      o.log?.warn('API key mirror unreachable', { error: errorMessage(e) });
      throw new KeyCheckUnavailableError(o.retryAfterSec);
    }
    if (record) {
      missing.delete(id);
      boundedSet(found, id, { record, at: now });
    } else {
      found.delete(id);
      boundedSet(missing, id, now);
    }
    return record;
  };

  return {
    synced: () => true,
    async verify(token: string, client = 'unknown') {
      const id = tokenId(token);
      // Hash even for a token of no id, so that every refusal costs the same.
      const hash = await hashToken(token);
      const rec = id ? await recordOf(id, client) : null;
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
