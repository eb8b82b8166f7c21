import type { Redis } from 'ioredis';
import { claimOf, encodeAnswer, RUNNING, type InboundReplays } from '../../core/ports/inbound-replays';

/** Replay marks on Redis (keys.inboundReplay): SET NX GET claims and reads in one atomic step. */
export const redisInboundReplays = (redis: Redis): InboundReplays => ({
  claim: async (key, ttlMs) => {
    // Redis 7: NX with GET answers the value held (nothing set) or null (set by this call).
    const held = (await redis.call('SET', key, RUNNING, 'NX', 'PX', String(Math.max(1, Math.ceil(ttlMs))), 'GET')) as string | null;
    return claimOf(held);
  },
  answer: async (key, answer) => {
    // XX: a claim that expired meanwhile is not brought back; KEEPTTL: the window stays the claim's.
    await redis.set(key, encodeAnswer(answer), 'KEEPTTL', 'XX');
  },
  release: async (key) => {
    await redis.del(key);
  },
});
