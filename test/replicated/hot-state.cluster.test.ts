import { afterAll, beforeAll } from 'vitest';
import { RedisHotState } from '../../workers/redis/hot-state';
import { hotStateContract } from '../contract/hot-state.contract';
import { DEFAULT_TTLS } from '../contract/hot-state.fixtures';
import type { MakeHotState } from '../contract/hot-state.fixtures';
import { dropNamespace, ownLayout, redisCluster } from './redis-cluster';

// The whole HotState contract on a real Redis Cluster (test/replicated/redis-cluster.ts), as
// on one Redis: each test on a key namespace of its own (a cluster has no databases to flush).

beforeAll(() => redisCluster.start(), 240_000);
afterAll(() => redisCluster.stop(), 120_000);

const make: MakeHotState = async (opts) => {
  const ttls = { ...DEFAULT_TTLS, ...opts?.ttls };
  const { ns, layout } = ownLayout();
  const a = redisCluster.client();
  const b = redisCluster.client();
  const state = new RedisHotState(a, ttls, layout);
  // Its own connection, so the race tests really have two clients.
  const peer = new RedisHotState(b, ttls, layout);
  return {
    state,
    peer,
    clock: { now: () => Date.now() },
    cleanup: async () => {
      await dropNamespace(a, ns);
      await Promise.all([state.close(), peer.close()]);
    },
  };
};

hotStateContract('redis cluster', make);
