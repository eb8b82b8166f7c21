import { createRedis } from '../../workers/redis/client';
import { requireEnv } from '../helpers/env';
import { startTestFleet, testConfig, type TestFleet } from '../helpers/fleet';
import { flushOwnDb, useRedisDb } from '../helpers/redis-db';
import { SYNC_OVERRIDES, syncWaitSuite } from './sync-wait.suite';

// Two api instances and a worker + scheduler, each a fleet of its own (as howk-api and
// howk-worker processes are): the outcome reaches the api that holds the request over Redis
// pub/sub, never in-process.

const redisDb = useRedisDb();

syncWaitSuite('real Kafka + Redis, two api instances, worker apart', async () => {
  const redis = createRedis(requireEnv('REDIS_URL'), { db: redisDb(), commandTimeoutMs: 2000 });
  await flushOwnDb(redis, redisDb());
  redis.disconnect();
  const config = testConfig('kafka', SYNC_OVERRIDES);
  const fleets: TestFleet[] = [];
  for (let i = 0; i < 2; i++) fleets.push(await startTestFleet('kafka', { config, redisDb: redisDb(), roles: { api: true, worker: false, scheduler: false } }));
  const worker = await startTestFleet('kafka', { config, redisDb: redisDb(), roles: { api: false, worker: true, scheduler: true } });
  const [a] = fleets as [TestFleet];
  await a.fleet.security!.ready;
  const adminKey = (await a.fleet.security!.keys!.create({ scopes: ['admin', 'read', 'enqueue'] })).key;
  return {
    apis: fleets.map((f) => f.baseUrl),
    adminKey,
    boundKey: async (c) => (await a.fleet.security!.keys!.create({ scopes: ['read', 'enqueue'], config_ids: [c] })).key,
    pending: () => a.records('pending'),
    stop: async () => {
      await worker.stop();
      for (const f of fleets) await f.stop();
    },
  };
});
