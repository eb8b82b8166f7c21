import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointHash } from '../../core/domain/ids';
import { clusterKeys } from '../../core/domain/keys';
import type { WebhookStatus } from '../../core/domain/status';
import { DEFAULT_RETRY_SHARDS, shardOf } from '../../core/domain/retry-shards';
import { guardParams } from '../../core/pipeline/guard-params';
import { RedisGuards } from '../../workers/redis/guards';
import { RedisHotState } from '../../workers/redis/hot-state';
import { uniq, waitFor } from '../helpers/env';
import { redisCluster } from '../replicated/redis-cluster';
import { configOf, edgeVars, ensureTopics, fleetEnv, startBridge, startEdge, type Bridge, type Edge } from './helpers/stack';

/** A delivered webhook's status, as howk-worker writes it. */
const baseStatus = (id: string, config: string, now: string): WebhookStatus => ({
  webhook_id: id,
  config_id: config,
  endpoint: 'http://127.0.0.1:9/hook',
  endpoint_hash: 'h',
  state: 'delivered',
  attempts: 1,
  max_attempts: 5,
  created_at: now,
  last_attempt_at: now,
  last_status_code: 200,
  last_error: null,
  next_retry_at: null,
  updated_at_ns: `${Date.now()}000000`,
});

// An edge in front of a fleet on a Redis Cluster (HOWK_EDGE_REDIS_CLUSTER): howk-bridge opens
// the cluster, the edge builds the fleet's hash-tagged key names, and what one writes the other
// reads: statuses the fleet's hot state wrote, idempotency claims of either door, circuits the
// fleet's guards opened, and the retry schedule the edge parks webhooks in. The cluster is
// shared (never flushed): every key here belongs to ids and hosts of this run only. With
// REDIS_CLUSTER_NODES unset, scripts/infra/redis-cluster.sh starts one for this file.
describe('the edge in front of a Redis Cluster', () => {
  const env = fleetEnv();
  const config = () => configOf(env);
  const tenant = uniq('tenant-cl');
  let redis: Redis;
  let hot: RedisHotState;
  let bridge: Bridge;
  let edge: Edge;

  beforeAll(async () => {
    await redisCluster.start();
    env.HOWK_REDIS_CLUSTER_NODES = redisCluster.nodes().join(',');
    await ensureTopics(env);
    redis = redisCluster.client();
    hot = new RedisHotState(redis, { status_ttl: 60_000, stats_ttl: 60_000, retry_data_ttl: 60_000 });
    bridge = await startBridge(env);
    edge = await startEdge(edgeVars(env, bridge.url, { HOWK_EDGE_REDIS_CLUSTER: 'true', HOWK_EDGE_CAPACITY_CACHE: '200ms' }));
  });
  afterAll(async () => {
    await edge?.stop();
    await bridge?.stop();
    redis?.disconnect();
    await redisCluster.stop();
  });

  const enqueue = async (body: unknown) => {
    const res = await edge.post(`/webhooks/${tenant}/enqueue`, body);
    return { status: res.status, body: (await res.json()) as { webhook_id?: string; status?: string; error?: { code: string } } };
  };

  it("reads the status the fleet's cluster hot state wrote", async () => {
    const id = uniq('wh_cl');
    const now = new Date().toISOString();
    await hot.apply({
      statuses: [
        {
          status: baseStatus(id, tenant, now),
        },
      ],
    });
    expect((await hot.getStatus(id))?.state).toBe('delivered');
    const res = await fetch(`${edge.url}/webhooks/${id}/status`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ webhook_id: id, state: 'delivered', attempts: 1, last_status_code: 200 });
  });

  it("counts what the fleet's cluster hot state counted", async () => {
    await hot.apply({ stats: { at: Date.now(), counts: { dead_lettered: 5 }, endpoints: [uniq('ep')] } });
    const fleet = await hot.stats(Date.now(), 24);
    expect(fleet.dead_lettered).toBeGreaterThanOrEqual(5);
    const res = await fetch(`${edge.url}/stats`);
    expect(res.status).toBe(200);
    const { last_24h } = (await res.json()) as { last_24h: { dead_lettered: number; unique_endpoints: number } };
    // The cluster is shared: others may count too, never less than this run did.
    expect(last_24h.dead_lettered).toBeGreaterThanOrEqual(5);
    expect(last_24h.unique_endpoints).toBeGreaterThanOrEqual(1);
  });

  it('refuses an edge left on the single-Redis names: its status reads answer 503, never a false 404', async () => {
    const id = uniq('wh_cl');
    const now = new Date().toISOString();
    await hot.apply({ statuses: [{ status: { ...baseStatus(id, tenant, now), state: 'delivered' } }] });
    const wrong = await startEdge(edgeVars(env, bridge.url));
    try {
      const res = await fetch(`${wrong.url}/webhooks/${id}/status`);
      const body = (await res.json()) as { error?: { code: string; message: string } };
      expect(res.status).toBe(503);
      // The client is told only that a dependency is down (the bridge's 403 names HOWK_EDGE_REDIS_CLUSTER).
      expect(body.error?.code).toBe('unavailable');
    } finally {
      await wrong.stop();
    }
  });

  it('dedupes an idempotency key the fleet claimed, and the fleet sees the claim the edge made', async () => {
    const key = uniq('order');
    const fleetId = uniq('wh_fleet');
    expect(await hot.claimIdempotency([{ configId: tenant, key, webhookId: fleetId }], 60_000)).toEqual([fleetId]);
    expect(await enqueue({ endpoint: 'http://127.0.0.1:9/idem', payload: { key }, idempotency_key: key })).toEqual({
      status: 200,
      body: { webhook_id: fleetId, status: 'duplicate' },
    });

    const key2 = uniq('order-edge');
    const first = await enqueue({ endpoint: 'http://127.0.0.1:9/idem', payload: { key2 }, idempotency_key: key2 });
    expect(first.status).toBe(202);
    const [held] = await hot.claimIdempotency([{ configId: tenant, key: key2, webhookId: uniq('wh_other') }], 60_000);
    expect(held?.split(' ')[0]?.replace(/^~/, '')).toBe(first.body.webhook_id);
  });

  it("parks a webhook of a circuit the fleet's guards opened, in the schedule the fleet's schedulers drain", async () => {
    const host = `${uniq('open')}.cluster.test`.toLowerCase();
    const endpoint = `http://${host}/hook`;
    const h = await endpointHash(endpoint);
    const guards = new RedisGuards(redis);
    for (let i = 0; i < config().circuit_breaker.failure_threshold; i++)
      await guards.complete(
        [{ id: `wh_probe_${i}`, endpointHash: h, host, now: Date.now(), outcome: 'failure', probe: false, counted: { endpoint: true, domain: false } }],
        guardParams(config()),
      );
    expect(await redis.hget(clusterKeys.circuit(h), 'state')).toBe('OPEN');
    const parked = await enqueue({ endpoint, payload: { parked: true } });
    expect(parked.status).toBe(202);
    const id = parked.body.webhook_id!;
    // The pre-shard schedule (`retries:{retries}`), or already the webhook's shard when a
    // scheduler on this cluster drained it meanwhile.
    const scheduled = async () =>
      (await redis.zscore(clusterKeys.retries(), id)) !== null || (await redis.zscore(clusterKeys.retryShard(shardOf(id, DEFAULT_RETRY_SHARDS)), id)) !== null;
    await waitFor(scheduled, { timeoutMs: 10_000, what: `webhook ${id} in the cluster's retry schedule` });
    const data = (await redis.get(clusterKeys.retryData(id))) ?? (await redis.get(clusterKeys.shardRetryData(shardOf(id, DEFAULT_RETRY_SHARDS), id)));
    expect(data).toContain(id);
  });
});
