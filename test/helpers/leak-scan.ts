import type { Config } from '../../core/config/schema';
import { createRedis } from '../../workers/redis/client';
import { requireEnv } from './env';
import type { TestFleet } from './fleet';

// Where a secret must never be: every record the fleet produced on its topics, every value
// of its Redis db, every log line. Returns the places where `needle` was found.

export const TOPICS: (keyof Config['kafka']['topics'])[] = ['pending', 'slow', 'results', 'deadletter', 'state'];

export const topicLeaks = (f: TestFleet, needle: string): string[] =>
  TOPICS.flatMap((t) =>
    f
      .records(t)
      .filter((r) => (r.value ?? '').includes(needle) || (r.key ?? '').includes(needle))
      .map((r) => `${t}@${r.offset}`),
  );

/** Every key and value of a Redis db (strings, hashes, lists, sets, sorted sets, streams). */
export const redisLeaks = async (db: number, needle: string): Promise<{ keys: number; found: string[] }> => {
  const redis = createRedis(requireEnv('REDIS_URL'), { db });
  const found: string[] = [];
  let keys = 0;
  try {
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'COUNT', 500);
      cursor = next;
      for (const key of batch) {
        keys++;
        const type = await redis.type(key);
        let text = key;
        if (type === 'string') text += await redis.get(key);
        else if (type === 'hash') text += JSON.stringify(await redis.hgetall(key));
        else if (type === 'list') text += JSON.stringify(await redis.lrange(key, 0, -1));
        else if (type === 'set') text += JSON.stringify(await redis.smembers(key));
        else if (type === 'zset') text += JSON.stringify(await redis.zrange(key, 0, -1, 'WITHSCORES'));
        else if (type === 'stream') text += JSON.stringify(await redis.xrange(key, '-', '+'));
        if (text.includes(needle)) found.push(`${type} ${key}`);
      }
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return { keys, found };
};
