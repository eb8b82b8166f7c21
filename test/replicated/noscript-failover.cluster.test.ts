import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisHotState } from '../../workers/redis/hot-state';
import { createRedis } from '../../workers/redis/client';
import { DEFAULT_TTLS, ns, statusOf } from '../contract/hot-state.fixtures';
import { waitFor } from '../helpers/env';
import { faultRedisCluster } from './faults';
import { ownLayout } from './redis-cluster';

// A Redis Cluster failover hands every slot to a replica whose script cache is empty (scripts
// are not replicated). The first writes of a client that still routes by the old masters are
// answered MOVED; ioredis sends such a pipeline again, and the script calls in it then meet the
// empty cache: each must fall back to EVAL, or howk-api's 'pending' statuses are lost (seen
// once: "status write after enqueue failed: NOSCRIPT"). A cluster of its own
// (HOWK_REPLICATED_NOSCRIPT_REDIS_PORT, default 17120: nodes 17120-17125): every master is
// failed over.

const rc = faultRedisCluster(Number(process.env.HOWK_REPLICATED_NOSCRIPT_REDIS_PORT ?? 17120));

const node = async <T>(port: number, fn: (r: Redis) => Promise<T>): Promise<T> => {
  const r = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  try {
    return await fn(r);
  } finally {
    r.disconnect();
  }
};

describe('script calls after a Redis Cluster failover', () => {
  beforeAll(() => rc.start(), 120_000);
  afterAll(() => rc.stop(), 60_000);

  it('a pending-status write right after every master failed over to its replica succeeds', async () => {
    const redis = createRedis('redis://127.0.0.1', { clusterNodes: rc.nodes, onError: () => {} });
    const state = new RedisHotState(redis, DEFAULT_TTLS, ownLayout().layout);
    const pending = (ids: string[]) => ({
      statuses: ids.map((id) => ({ status: statusOf(id, ns(Date.now())) })),
      stats: { at: Date.now(), counts: { enqueued: ids.length }, endpoints: ['ab'.repeat(16)] },
    });
    try {
      // Every script of the write is loaded on the masters (and on their connections).
      await state.apply(pending(Array.from({ length: 20 }, (_, i) => `wh_before_${i}`)));
      const replicas = [];
      for (const p of rc.ports) if ((await rc.role(p)) === 'slave') replicas.push(p);
      expect(replicas).toHaveLength(3);
      // One at a time, each replica in sync first (a manual failover waits for its offset).
      for (const p of replicas) {
        await waitFor(async () => /master_link_status:up/.test(await node(p, (r) => r.info('replication'))), { timeoutMs: 30_000, intervalMs: 100, what: `replica ${p} in sync` });
        await node(p, (r) => r.cluster('FAILOVER'));
        await waitFor(async () => (await rc.role(p)) === 'master', { timeoutMs: 30_000, intervalMs: 50, what: `replica ${p} promoted` });
      }

      const ids = Array.from({ length: 20 }, (_, i) => `wh_after_${i}`);
      await state.apply(pending(ids));
      for (const id of ids) expect((await state.getStatus(id))?.state, id).toBe('pending');
    } finally {
      await state.close();
    }
  }, 120_000);
});
