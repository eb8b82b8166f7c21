import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import type { OutcomeBus } from '../../core/ports/outcome-bus';
import { createRedis } from '../../workers/redis/client';
import { redisOutcomeBus } from '../../workers/redis/outcome-bus';
import { requireEnv } from '../helpers/env';
import { useRedisDb } from '../helpers/redis-db';
import { outcomeBusContract } from './outcome-bus.contract';

// Real Redis pub/sub, publisher and subscriber on connections of their own (as a worker and an
// api process are). Channels are not per database and every listener name is unique per run.
const db = useRedisDb();
let pubRedis: Redis;
let subRedis: Redis;
let publisher: OutcomeBus & { close(): Promise<void> };
let subscriber: OutcomeBus & { close(): Promise<void> };
beforeAll(() => {
  // Nothing is written to the keyspace; a db of its own all the same.
  pubRedis = createRedis(requireEnv('REDIS_URL'), { db: db() });
  subRedis = createRedis(requireEnv('REDIS_URL'), { db: db() });
  publisher = redisOutcomeBus(pubRedis);
  subscriber = redisOutcomeBus(subRedis);
});
afterAll(async () => {
  await subscriber?.close();
  await publisher?.close();
  await pubRedis?.quit();
  await subRedis?.quit();
});

outcomeBusContract('redis', () => ({
  publisher: { publish: (l, o) => publisher.publish(l, o), subscribe: (l, on) => publisher.subscribe(l, on) },
  subscriber: { publish: (l, o) => subscriber.publish(l, o), subscribe: (l, on) => subscriber.subscribe(l, on) },
}));
