import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { endpointHash } from '../../core/domain/ids';
import { guardParams } from '../../core/pipeline/guard-params';
import { RedisGuards } from '../../workers/redis/guards';
import { waitFor } from '../helpers/env';
import { redisUrlOf } from '../helpers/redis-db';
import { collect, configOf, edgeVars, ensureTopics, fleetEnv, startBridge, startEdge, useFleetRedisDb, type Bridge, type Edge } from './helpers/stack';

// DomainGate fronting a host's capacity: the capacity is written by the worker's own guard
// code (RedisGuards.complete, what howk-worker runs after every attempt) into the shared
// Redis; the gate reads it through the bridge and decides fast lane, slow lane or parked.
describe('DomainGate and the capacity the fleet measured', () => {
  const env = fleetEnv();
  // The worker's settings: endpoint and host limits measured, starting at 4 in flight.
  Object.assign(env, { HOWK_CONCURRENCY_INITIAL_LIMIT: '4', HOWK_CONCURRENCY_MAX_LIMIT: '4', HOWK_CONCURRENCY_MAX_INFLIGHT_PER_DOMAIN: '4' });
  const db = useFleetRedisDb(env);
  const config = () => configOf(env);
  let bridge: Bridge;
  let edge: Edge;
  let redis: Redis;
  let guards: RedisGuards;
  let records: Awaited<ReturnType<typeof collect>>;

  beforeAll(async () => {
    await ensureTopics(env);
    redis = new Redis(redisUrlOf(db()));
    guards = new RedisGuards(redis);
    bridge = await startBridge(env);
    // Unmeasured hosts: 1,000/s, so that anything slow or parked here comes from the capacity.
    edge = await startEdge(
      edgeVars(env, bridge.url, {
        ...Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('HOWK_CONCURRENCY_'))),
        HOWK_EDGE_ADMISSION_RATE: '1000',
        HOWK_EDGE_ADMISSION_BURST: '1000',
        HOWK_EDGE_CAPACITY_CACHE: '200ms',
      }),
    );
    const t = config().kafka.topics;
    records = await collect(env, [t.pending, t.slow, t.state]);
  });
  afterAll(async () => {
    await records?.stop();
    await edge?.stop();
    await bridge?.stop();
    redis?.disconnect();
  });

  /** Attempts as howk-worker records them: `n` answers of `ms` each, or failures. */
  const attempts = async (endpoint: string, n: number, outcome: 'success' | 'failure', ms: number) => {
    const host = new URL(endpoint).hostname;
    const h = await endpointHash(endpoint);
    for (let i = 0; i < n; i++) {
      await guards.complete(
        [
          {
            id: `wh_probe_${i}`,
            endpointHash: h,
            host,
            now: Date.now(),
            outcome,
            probe: false,
            counted: { endpoint: true, domain: true },
            sample: outcome === 'success' ? { ms, drop: false, timeout: false } : undefined,
          },
        ],
        guardParams(config()),
      );
    }
    return h;
  };

  const enqueueMany = async (endpoint: string, n: number, tag: string) => {
    const replies = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        edge.post('/webhooks/tenant-cap/enqueue', { endpoint, payload: { tag, i } }).then(async (r) => ({ status: r.status, body: (await r.json()) as { webhook_id: string } })),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(replies.map(() => 202));
    return replies.map((r) => r.body.webhook_id);
  };

  const laneCounts = async (tag: string, n: number) => {
    const t = config().kafka.topics;
    const count = (topic: string) =>
      new Set(
        records
          .of(topic)
          .filter((r) => r.value?.includes(`"${tag}"`))
          .map((r) => JSON.parse(r.value!).id as string),
      ).size;
    await waitFor(() => count(t.pending) + count(t.slow) >= n, { what: `${n} webhooks of ${tag} on the lanes` });
    return { pending: count(t.pending), slow: count(t.slow) };
  };

  it('admits a measured host to the fast lane at the rate its limit sustains and sends the rest to the slow lane', async () => {
    // 4 in flight at 1 s each: 4 webhooks/s, a burst of 4.
    const slowHost = 'http://measured.capacity.test/hook';
    await attempts(slowHost, 3, 'success', 1000);
    expect(await redis.hget(keys.domainLimit('measured.capacity.test'), 'lat')).not.toBeNull();
    await enqueueMany(slowHost, 20, 'measured');
    const measured = await laneCounts('measured', 20);
    expect(measured.pending).toBeGreaterThanOrEqual(4);
    expect(measured.pending).toBeLessThanOrEqual(6);
    expect(measured.slow).toBe(20 - measured.pending);

    // The same burst to a host the fleet never measured: the configured 1,000/s takes it all.
    await enqueueMany('http://unmeasured.capacity.test/hook', 20, 'unmeasured');
    expect(await laneCounts('unmeasured', 20)).toEqual({ pending: 20, slow: 0 });
  });

  it('parks webhooks of an open circuit in the retry schedule, with a howk.state snapshot, and none in the lanes', async () => {
    const endpoint = 'http://broken.capacity.test/hook';
    const h = await attempts(endpoint, config().circuit_breaker.failure_threshold, 'failure', 0);
    expect(await redis.hget(keys.circuit(h), 'state')).toBe('OPEN');
    const openUntil = Number(await redis.hget(keys.circuit(h), 'open_until'));
    const ids = await enqueueMany(endpoint, 3, 'parked');
    for (const id of ids) {
      expect(Number(await redis.zscore(keys.retries(), id))).toBe(openUntil);
      expect(await redis.get(keys.retryData(id))).toContain(`"id":"${id}"`);
    }
    const t = config().kafka.topics;
    const snaps = await waitFor(() => {
      const s = records.of(t.state).filter((r) => ids.includes(r.key ?? ''));
      return s.length >= 3 ? s : undefined;
    });
    for (const s of snaps) expect(JSON.parse(s.value!)).toMatchObject({ state: 'parked', status: { held: 'circuit_open', next_retry_at: new Date(openUntil).toISOString() } });
    const onLanes = [...records.of(t.pending), ...records.of(t.slow)].filter((r) => r.value?.includes('"parked"'));
    expect(onLanes).toEqual([]);
    expect((await edge.gateStats('broken.capacity.test')).admitted).toMatchObject({ parked: 3, pending: 0, slow: 0 });
  });

  it('follows the circuit: once the fleet closes it, the next enqueues take the fast lane again', async () => {
    const endpoint = 'http://recovering.capacity.test/hook';
    const h = await attempts(endpoint, config().circuit_breaker.failure_threshold, 'failure', 0);
    await enqueueMany(endpoint, 1, 'recovering-1');
    expect((await edge.gateStats('recovering.capacity.test')).admitted.parked).toBe(1);
    // The worker's probes succeeded: closed.
    await redis.hset(keys.circuit(h), 'state', 'CLOSED', 'failures', 0);
    await new Promise((r) => setTimeout(r, 300));
    // The first request after the cache time may still see the old state while it refreshes.
    await enqueueMany(endpoint, 1, 'recovering-2');
    await waitFor(async () => {
      await enqueueMany(endpoint, 1, 'recovering-3');
      return (await edge.gateStats('recovering.capacity.test')).admitted.pending > 0;
    });
  });
});
