import type { Redis } from '@upstash/redis/cloudflare';
import { keys as singleKeys, type RedisKeys } from '../../core/domain/keys';
import type { IdempotencyClaim, IdempotencyStore } from '../../core/ports/hot-state';

/**
 * Idempotency claims at the edge, in the fleet's Redis through howk-bridge: the keys and values
 * howk-api's claimIdempotency script uses, so a key claimed through either door is seen by the
 * other. The bridge runs no script for the edge, so the script's two steps are two commands of
 * one pipeline: a read of the key's shape before the config id was tagged (only ever read), and
 * SET NX GET. A release reads the claim and deletes it when it still holds our value: not one
 * step, but only the claimer releases, within its request, long before the claim's TTL could
 * let another request take the key.
 */
export const restIdempotency = (redis: Redis, keys: RedisKeys = singleKeys): IdempotencyStore => ({
  async claimIdempotency(items: IdempotencyClaim[], ttlMs: number): Promise<string[]> {
    if (!items.length) return [];
    const p = redis.pipeline();
    for (const { configId, key, webhookId } of items) {
      p.get(keys.legacyIdempotency(configId, key));
      p.set(keys.idempotency(configId, key), webhookId, { nx: true, get: true, px: Math.max(1, Math.ceil(ttlMs)) });
    }
    const replies = await p.exec<(string | null)[]>();
    return items.map((item, i) => replies[2 * i] ?? replies[2 * i + 1] ?? item.webhookId);
  },
  async commitIdempotency(items: (IdempotencyClaim & { from: string })[], ttlMs: number): Promise<void> {
    if (!items.length) return;
    const p = redis.pipeline();
    for (const { configId, key, webhookId } of items) p.set(keys.idempotency(configId, key), webhookId, { xx: true, px: Math.max(1, Math.ceil(ttlMs)) });
    await p.exec();
  },
  async releaseIdempotency(items: IdempotencyClaim[]): Promise<void> {
    if (!items.length) return;
    const names = items.map(({ configId, key }) => keys.idempotency(configId, key));
    const p = redis.pipeline();
    for (const n of names) p.get(n);
    const held = await p.exec<(string | null)[]>();
    const mine = names.filter((_, i) => held[i] === items[i]!.webhookId);
    if (!mine.length) return;
    // One DEL per key: claims of several configs sit in several slots of a Redis Cluster.
    const d = redis.pipeline();
    for (const n of mine) d.del(n);
    await d.exec();
  },
});
