import { afterAll, beforeAll } from 'vitest';
import type { Redis } from 'ioredis';
import { endedLookupContract } from '../contract/ended-lookup.contract';
import { redisCluster } from './redis-cluster';

// The lookup on a real Redis Cluster: one call per slot of the batch's webhooks.
let client: Redis;
beforeAll(async () => {
  await redisCluster.start();
  client = redisCluster.client();
}, 240_000);
afterAll(async () => {
  await client.quit();
  await redisCluster.stop();
}, 120_000);

endedLookupContract('redis cluster', () => client, { oneCall: false });
