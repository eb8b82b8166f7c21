import type { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { endedLookupContract } from '../contract/ended-lookup.contract';
import { requireEnv } from '../helpers/env';
import { useFlushedRedis } from '../helpers/flushed-redis';

let client: Redis;
const db = useFlushedRedis(() => {});
beforeAll(() => {
  client = createRedis(requireEnv('REDIS_URL'), { db: db() });
});
afterAll(async () => {
  await client.quit();
});

endedLookupContract('one Redis', () => client, { oneCall: true });
