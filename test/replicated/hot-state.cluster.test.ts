import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotConfiguredError } from '../../core/errors/errors';
import { RedisHotState } from '../../workers/redis/hot-state';
import { connectionContract } from '../contract/hot-state.contract';
import { deadLettersContract } from '../contract/hot-state.contract-deadletters';
import { idempotencyContract } from '../contract/hot-state.contract-idempotency';
import { rebuildContract } from '../contract/hot-state.contract-rebuild';
import { retriesContract } from '../contract/hot-state.contract-retries';
import { statsContract } from '../contract/hot-state.contract-stats';
import { statusContract } from '../contract/hot-state.contract-status';
import { timelineContract } from '../contract/hot-state.contract-timeline';
import { DEFAULT_TTLS } from '../contract/hot-state.fixtures';
import type { MakeHotState } from '../contract/hot-state.fixtures';
import { dropNamespace, ownLayout, redisCluster } from './redis-cluster';

// The HotState contract on a real Redis Cluster (test/replicated/redis-cluster.ts): each test
// on a key namespace of its own (a cluster has no databases to flush). The webhook listing and
// the outstanding count read indexes Howk does not keep on a cluster (docs/ARCHITECTURE.md,
// "Redis Cluster: what stays atomic"): their suites are not run; the test below holds that
// they refuse (501) rather than answer an empty list.

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

const name = 'redis cluster';
idempotencyContract(name, make);
statusContract(name, make);
retriesContract(name, make);
statsContract(name, make);
timelineContract(name, make);
deadLettersContract(name, make);
rebuildContract(name, make, { listing: false });
connectionContract(name, make);

describe('RedisHotState on a cluster: no listing indexes', () => {
  it('refuses to list webhooks or count outstanding ones (NotConfiguredError: 501) instead of answering from indexes it does not keep', async () => {
    const h = await make();
    try {
      await expect(h.state.listWebhooks({ configId: 'c', limit: 10 })).rejects.toBeInstanceOf(NotConfiguredError);
      await expect(h.state.countOutstanding('c')).rejects.toBeInstanceOf(NotConfiguredError);
    } finally {
      await h.cleanup();
    }
  });
});
