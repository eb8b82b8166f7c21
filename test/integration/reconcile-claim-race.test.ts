import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RetryEntry, StatusWrite } from '../../core/ports/hot-state';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { requireEnv } from '../helpers/env';
import { hook, statusFor } from '../helpers/reconcile-fixtures';
import { useRedisDb } from '../helpers/redis-db';
import { scheduledIds } from '../helpers/retry-keys';

// Found by the chaos suite (kill -9 scenario): a webhook stayed "retrying" with its retry
// data in Redis but no schedule entry, and was never delivered. A worker's outcome pipeline
// wrote the schedule entry (already due: the outcome became durable after its due time)
// and then the data; a scheduler's claim that ran between the two found no data, dropped
// the entry as unreadable, and the data landed after it. A pipeline is not atomic: a large
// one is read in several parts, and other clients' commands run in between. A db of its own (useRedisDb).

const db = useRedisDb();
const TTLS = { status_ttl: 600_000, stats_ttl: 600_000, retry_data_ttl: 600_000 };

let writer: RedisHotState;
let scheduler: RedisHotState;
let admin: Redis;

beforeAll(async () => {
  admin = createRedis(requireEnv('REDIS_URL'), { db: db() });
  await admin.flushdb();
  writer = new RedisHotState(createRedis(requireEnv('REDIS_URL'), { db: db() }), TTLS);
  scheduler = new RedisHotState(createRedis(requireEnv('REDIS_URL'), { db: db() }), TTLS);
});
afterAll(async () => {
  await admin.flushdb();
  await Promise.all([writer.close(), scheduler.close(), admin.quit()]);
});

describe('a retry written while a scheduler claims', () => {
  it('is either claimed or still scheduled afterwards, never dropped', async () => {
    const ROUNDS = 30;
    const PER_ROUND = 40;
    const claimed = new Set<string>();
    let claiming = true;
    // The scheduler: claims due retries as fast as it can, acks nothing (a claimed entry stays, leased).
    const claims = (async () => {
      while (claiming) for (const r of await scheduler.claimDueRetries(Date.now(), 500, 60_000)) claimed.add(r.id);
    })();
    const written: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // A large outcome pipeline (so that Redis reads it in several parts) whose retries are due already.
      const statuses: StatusWrite[] = [];
      const retries: RetryEntry[] = [];
      for (let i = 0; i < PER_ROUND; i++) {
        const id = `wh_race_${round}_${i}`;
        const w = hook(id, { payload: JSON.stringify({ pad: 'x'.repeat(2000), i }) });
        statuses.push({ status: statusFor(w, `${Date.now()}${String(i).padStart(6, '0')}`) });
        retries.push({ id, dueAt: Date.now() - 1000, data: JSON.stringify(w) });
        written.push(id);
      }
      await writer.apply({ statuses, retries });
    }
    claiming = false;
    await claims;
    const scheduled = new Set(await scheduledIds(admin));
    const dropped = written.filter((id) => !claimed.has(id) && !scheduled.has(id));
    expect(dropped).toEqual([]);
  }, 60_000);
});
