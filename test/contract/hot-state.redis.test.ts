import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { useRedisDb } from '../helpers/redis-db';
import { DEFAULT_TTLS } from './hot-state.fixtures';
import { hotStateContract } from './hot-state.contract';

// Real Redis from REDIS_URL, a db of its own (useRedisDb), flushed before each test.
const url = process.env.REDIS_URL;
if (!url) throw new Error('REDIS_URL is not set: the Redis HotState contract needs a real Redis (scripts/infra/redis.sh start prints one)');
const db = useRedisDb();

hotStateContract('redis', async (opts) => {
  const ttls = { ...DEFAULT_TTLS, ...opts?.ttls };
  const DB = db();
  const state = new RedisHotState(createRedis(url, { db: DB }), ttls);
  // Its own connection, so the race test really has two clients claiming.
  const peer = new RedisHotState(createRedis(url, { db: DB }), ttls);
  const admin = createRedis(url, { db: DB });
  await admin.flushdb();
  await admin.quit();
  return {
    state,
    peer,
    clock: { now: () => Date.now() },
    cleanup: async () => {
      await Promise.all([state.close(), peer.close()]);
    },
  };
});
