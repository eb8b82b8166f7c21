import { createRedis } from '../../workers/redis/client';
import { redisInboundReplays } from '../../workers/redis/inbound-replays';
import { useRedisDb } from '../helpers/redis-db';
import { inboundReplaysContract } from './inbound-replays.contract';

// Real Redis from REDIS_URL, a db of its own, flushed before each test; two connections.
const url = process.env.REDIS_URL;
if (!url) throw new Error('REDIS_URL is not set: the Redis InboundReplays contract needs a real Redis');
const db = useRedisDb();

inboundReplaysContract('redis', async () => {
  const a = createRedis(url, { db: db() });
  const b = createRedis(url, { db: db() });
  await a.flushdb();
  return {
    store: redisInboundReplays(a),
    peer: redisInboundReplays(b),
    pass: (ms) => new Promise((r) => setTimeout(r, ms)),
    cleanup: async () => {
      await Promise.all([a.quit(), b.quit()]);
    },
  };
});
