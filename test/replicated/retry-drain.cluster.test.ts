import { afterAll, beforeAll, expect, it } from 'vitest';
import { allShards } from '../../core/domain/retry-shards';
import { RedisHotState } from '../../workers/redis/hot-state';
import { DEFAULT_TTLS } from '../contract/hot-state.fixtures';
import { dropNamespace, ownLayout, redisCluster } from './redis-cluster';

// The upgrade of a running system on a Redis Cluster: retries still in the schedule kept before
// the shards (`retries:{retries}`, data under the same tag) are moved into their shards, each
// shard its own slot (every script call keeps to one slot: a CROSSSLOT error would fail it).

beforeAll(() => redisCluster.start(), 240_000);
afterAll(() => redisCluster.stop(), 120_000);

it('drains the pre-shard schedule into the shards, due times and data as they were', async () => {
  const { ns, layout } = ownLayout();
  const redis = redisCluster.client();
  const state = new RedisHotState(redis, { ...DEFAULT_TTLS, retry_shards: 8 }, layout);
  try {
    const now = Date.now();
    const ids = Array.from({ length: 300 }, (_, i) => `wh_old_${String(i).padStart(3, '0')}`);
    const data = (id: string) => `{"id":"${id}","config_id":"cfg_${id.length % 3}","payload":{}}`;
    const p = redis.pipeline();
    for (const id of ids) p.zadd(layout.retries(), now - 10, id).set(layout.retryData(id), data(id), 'PX', 600_000);
    await p.exec();
    expect(await state.retryCount()).toBe(300);
    let looked = 0;
    while ((looked = await state.drainLegacyRetries(64)) > 0) expect(looked).toBeLessThanOrEqual(64);
    expect(await redis.zcard(layout.retries())).toBe(0);
    expect(await redis.exists(layout.retryData(ids[0]!))).toBe(0);
    expect(await state.retryCount()).toBe(300);
    const got = await state.claimDueRetries(now, 1000, 30_000, allShards(8));
    expect(got.map((r) => r.id).sort()).toEqual(ids);
    expect(got.every((r) => r.data === data(r.id))).toBe(true);
  } finally {
    await dropNamespace(redis, ns);
    await state.close();
  }
}, 60_000);
