import type { Redis } from '@upstash/redis/cloudflare';
import { claimOf, encodeAnswer, RUNNING, type InboundReplays } from '../../core/ports/inbound-replays';

/**
 * Replay marks at the edge, in the fleet's Redis through howk-bridge (the same keys as
 * howk-api's, so a copy sent to either runtime is caught): SET NX GET claims and reads at once.
 */
export const restInboundReplays = (redis: Redis): InboundReplays => ({
  claim: async (key, ttlMs) => claimOf(await redis.set<string>(key, RUNNING, { nx: true, get: true, px: Math.max(1, Math.ceil(ttlMs)) })),
  answer: async (key, answer) => {
    await redis.set(key, encodeAnswer(answer), { xx: true, keepTtl: true });
  },
  release: async (key) => {
    await redis.del(key);
  },
});
