import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisGuards } from '../../workers/redis/guards';
import { guardsContract } from '../contract/guards.contract';
import { guardsBatchContract } from '../contract/guards.contract-batch';
import { guardsGaugesContract } from '../contract/guards.contract-gauges';
import { guardsPauseContract } from '../contract/guards.contract-pause';
import { guardsRestoreContract } from '../contract/guards.contract-restore';
import { EP, EP2, HOST, T0, completion, params, req, type MakeGuards } from '../contract/guards.fixtures';
import { dropNamespace, ownLayout, redisCluster } from './redis-cluster';

// The Guards contract on a real Redis Cluster (test/replicated/redis-cluster.ts): each test on
// a key namespace of its own. The per-host limit is not kept on a cluster (its keys and an
// endpoint's are two slots; the config refuses it: core/config/redis.ts), so its cases are not
// run; the test below holds that a call asking for it fails rather than admitting past it.

beforeAll(() => redisCluster.start(), 240_000);
afterAll(() => redisCluster.stop(), 120_000);

const make: MakeGuards = async () => {
  const { ns, layout } = ownLayout();
  // Two connections: the race tests really have two clients admitting.
  const a = redisCluster.client();
  const b = redisCluster.client();
  return {
    guards: new RedisGuards(a, layout),
    peer: new RedisGuards(b, layout),
    cleanup: async () => {
      await dropNamespace(a, ns);
      await Promise.all([a.quit(), b.quit()]);
    },
  };
};

const name = 'redis cluster';
const caps = { hostLimits: false };
guardsContract(name, make, caps);
guardsPauseContract(name, make);
guardsRestoreContract(name, make);
guardsGaugesContract(name, make);
guardsBatchContract(name, make, caps);

describe('RedisGuards on a cluster: the canary, read before the endpoint calls', () => {
  it('with requireCanary, admits nothing (wait) and takes no lease while the canary is missing, then admits once it is back', async () => {
    const { ns, layout } = ownLayout();
    const redis = redisCluster.client();
    try {
      const guards = new RedisGuards(redis, layout);
      const p = params({ requireCanary: true, maxInflightPerEndpoint: 5 });
      expect(await guards.admit([req({ id: 'wh_1' }), req({ id: 'wh_2', endpointHash: EP2 })], p)).toEqual([{ kind: 'wait' }, { kind: 'wait' }]);
      expect((await guards.endpoint(EP, Date.now(), p)).inflight).toBe(0);
      await redis.set(layout.canary(), 'x');
      expect(await guards.admit([req({ id: 'wh_1' }), req({ id: 'wh_2', endpointHash: EP2 })], p)).toMatchObject([{ kind: 'go' }, { kind: 'go' }]);
    } finally {
      await dropNamespace(redis, ns);
      await redis.quit();
    }
  });
});

describe('RedisGuards on a cluster: lease renewal', () => {
  it('keeps a renewed lease counting past its first end; a completed one is not brought back', async () => {
    const h = await make();
    try {
      const p = params({ maxInflightPerEndpoint: 2, inflightLeaseMs: 10_000 });
      const counted = { endpoint: true, domain: false };
      expect(await h.guards.admit([req({ id: 'wh_long' }), req({ id: 'wh_short', endpointHash: EP2 })], p)).toMatchObject([{ kind: 'go' }, { kind: 'go' }]);
      await h.guards.complete([completion({ id: 'wh_short', endpointHash: EP2, outcome: 'success', now: T0 + 1000, counted })], p);
      await h.guards.renew(
        [
          { id: 'wh_long', endpointHash: EP, host: HOST, counted },
          { id: 'wh_short', endpointHash: EP2, host: HOST, counted },
        ],
        T0 + 8000,
        p,
      );
      // wh_long now runs out at T0 + 18 s (past its first end at T0 + 10 s); wh_short stays ended.
      expect((await h.guards.endpoint(EP, T0 + 12_000, p)).inflight).toBe(1);
      expect((await h.guards.endpoint(EP2, T0 + 12_000, p)).inflight).toBe(0);
      expect((await h.guards.endpoint(EP, T0 + 18_000, p)).inflight).toBe(0);
    } finally {
      await h.cleanup();
    }
  });
});

describe('RedisGuards on a cluster: no per-host limit', () => {
  it('fails an admission that asks for a host limit (its keys are another slot) instead of admitting past it', async () => {
    const h = await make();
    try {
      await expect(h.guards.admit([req()], params({ maxInflightPerEndpoint: 5, maxInflightPerDomain: () => 1 }))).rejects.toThrow(/same slot|non local key/);
      expect((await h.guards.endpoint(EP, Date.now(), params())).inflight).toBe(0);
    } finally {
      await h.cleanup();
    }
  });
});
