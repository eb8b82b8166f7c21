import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisGuards } from '../../workers/redis/guards';
import { guardsContract } from '../contract/guards.contract';
import { guardsBatchContract } from '../contract/guards.contract-batch';
import { guardsGaugesContract } from '../contract/guards.contract-gauges';
import { guardsPauseContract } from '../contract/guards.contract-pause';
import { guardsRestoreContract } from '../contract/guards.contract-restore';
import { EP, EP2, HOST, T0, completion, params, req, type MakeGuards } from '../contract/guards.fixtures';
import { dropNamespace, ownLayout, redisCluster } from './redis-cluster';
import { clusterKeys } from '../../core/domain/keys';
import { slotOf } from '../../workers/redis/slots';

// The Guards contract on a real Redis Cluster (test/replicated/redis-cluster.ts): each test on
// a key namespace of its own. The per-host limit is kept in two steps on a cluster (the
// host's keys and an endpoint's are two slots: workers/redis/guard-cluster.ts), not as the
// one-call adaptive limit of one Redis, so the shared domain-limit cases are not run; the
// cluster's own cases are below.

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

describe('RedisGuards on a cluster: the per-host in-flight limit (host lease first, then the endpoint)', () => {
  const EP3 = 'a3'.repeat(16);
  const withCluster = async (test: (guards: RedisGuards, hostLeases: (now: number) => Promise<number>, layout: ReturnType<typeof ownLayout>['layout']) => Promise<void>) => {
    const { ns, layout } = ownLayout();
    const redis = redisCluster.client();
    try {
      await test(new RedisGuards(redis, layout), (now) => redis.zcount(layout.domainInflight(HOST), `(${now}`, '+inf'), layout);
    } finally {
      await dropNamespace(redis, ns);
      await redis.quit();
    }
  };
  const p = params({ maxInflightPerDomain: (host) => (host === HOST ? 2 : 0), maxInflightPerEndpoint: 5, inflightLeaseMs: 10_000 });
  const three = (now = T0) => [req({ id: 'wh_a', now }), req({ id: 'wh_b', endpointHash: EP2, now }), req({ id: 'wh_c', endpointHash: EP3, now })];

  it('lets 2 of 3 endpoints of one host go at once, across slots; a completion lets the third go', async () => {
    await withCluster(async (guards, hostLeases) => {
      expect(new Set([EP, EP2, EP3].map((h) => slotOf(clusterKeys.inflight(h)))).size).toBe(3);
      const first = await guards.admit(three(), p);
      expect(first).toMatchObject([{ kind: 'go', counted: { endpoint: true, domain: true } }, { kind: 'go', counted: { endpoint: true, domain: true } }, { kind: 'wait' }]);
      // Asked again (another worker, one by one), the host is still full.
      expect(await guards.admit([req({ id: 'wh_c', endpointHash: EP3 })], p)).toEqual([{ kind: 'wait' }]);
      expect(await hostLeases(T0)).toBe(2);
      await guards.complete([completion({ id: 'wh_a', outcome: 'success', now: T0 + 10, counted: { endpoint: true, domain: true } })], p);
      expect(await hostLeases(T0)).toBe(1);
      expect(await guards.admit([req({ id: 'wh_c', endpointHash: EP3, now: T0 + 20 })], p)).toMatchObject([{ kind: 'go', counted: { domain: true } }]);
      expect(await guards.admit([req({ id: 'wh_d', endpointHash: EP, now: T0 + 30 })], p)).toEqual([{ kind: 'wait' }]);
      // The endpoint's own lease ended with the completion too.
      expect((await guards.endpoint(EP, T0 + 30, p)).inflight).toBe(0);
    });
  });

  it('frees the place of an expired host lease; a renewed one keeps it', async () => {
    await withCluster(async (guards) => {
      await guards.admit(three(), p);
      await guards.renew([{ id: 'wh_b', endpointHash: EP2, host: HOST, counted: { endpoint: true, domain: true } }], T0 + 8000, p);
      // wh_a's lease ran out at T0 + 10 s (its worker died); wh_b's now ends at T0 + 18 s.
      expect(await guards.admit([req({ id: 'wh_c', endpointHash: EP3, now: T0 + 10_001 })], p)).toMatchObject([{ kind: 'go', counted: { domain: true } }]);
      expect(await guards.admit([req({ id: 'wh_d', endpointHash: EP3, now: T0 + 10_002 })], p)).toEqual([{ kind: 'wait' }]);
    });
  });

  it('gives the host lease back when the endpoint refuses (paused, endpoint full)', async () => {
    await withCluster(async (guards, hostLeases) => {
      await guards.pause({ kind: 'endpoint', id: EP3 });
      expect(await guards.admit([req({ id: 'wh_p', endpointHash: EP3 })], p)).toEqual([{ kind: 'paused', scope: 'endpoint' }]);
      expect(await hostLeases(T0)).toBe(0);
      const oneEach = params({ ...p, maxInflightPerEndpoint: 1 });
      expect(await guards.admit([req({ id: 'wh_a' }), req({ id: 'wh_a2' })], oneEach)).toMatchObject([{ kind: 'go' }, { kind: 'wait' }]);
      expect(await hostLeases(T0)).toBe(1);
      // The place wh_a2 held for a moment is free: another endpoint of the host takes it.
      expect(await guards.admit([req({ id: 'wh_b', endpointHash: EP2 })], oneEach)).toMatchObject([{ kind: 'go', counted: { domain: true } }]);
      expect(await hostLeases(T0)).toBe(2);
    });
  });

  it('keeps the lease of a copy on the wire when its webhook, asked again, is refused by its endpoint', async () => {
    await withCluster(async (guards, hostLeases) => {
      expect(await guards.admit([req({ id: 'wh_x', endpointHash: EP3 })], p)).toMatchObject([{ kind: 'go', counted: { domain: true } }]);
      await guards.pause({ kind: 'endpoint', id: EP3 });
      // The same webhook consumed again (its partition moved) while its first copy is on the wire.
      expect(await guards.admit([req({ id: 'wh_x', endpointHash: EP3, now: T0 + 5 })], p)).toEqual([{ kind: 'paused', scope: 'endpoint' }]);
      expect(await hostLeases(T0 + 5)).toBe(1);
    });
  });

  it('holds the host limit against two clients admitting at once', async () => {
    const h = await make();
    try {
      const batch = (c: string) => Array.from({ length: 4 }, (_, i) => req({ id: `wh_${c}${i}`, endpointHash: [EP, EP2, EP3][i % 3] }));
      const [a, b] = await Promise.all([h.guards.admit(batch('a'), p), h.peer.admit(batch('b'), p)]);
      expect([...a, ...b].filter((x) => x.kind === 'go')).toHaveLength(2);
      expect([...a, ...b].filter((x) => x.kind === 'wait')).toHaveLength(6);
    } finally {
      await h.cleanup();
    }
  });

  it('leaves a host without a limit alone (5 at once, as many as the endpoint allows)', async () => {
    await withCluster(async (guards) => {
      const other = Array.from({ length: 5 }, (_, i) => req({ id: `wh_o${i}`, host: 'other.example.com' }));
      expect((await guards.admit(other, p)).every((a) => a.kind === 'go' && !a.counted.domain)).toBe(true);
    });
  });
});
