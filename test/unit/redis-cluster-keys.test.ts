import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { clusterKeys, keys, namespaced, scriptPrefix, slotId } from '../../core/domain/keys';
import { parseNode } from '../../workers/redis/client';
import { slotOf } from '../../workers/redis/slots';

// The key layout on a Redis Cluster (core/domain/keys.ts clusterKeys): the keys one script
// call or decision touches hash to one slot, and the scripts' prefix-built keys are the same
// keys the TypeScript side reads. A single Redis keeps the layout it had.

const slots = (ks: string[]) => new Set(ks.map(slotOf));

describe('clusterKeys', () => {
  const ep = 'a3f9c0d1e2b4';
  const endpointKeys = (k: typeof clusterKeys) => [
    k.circuit(ep),
    k.inflight(ep),
    k.endpointLimit(ep),
    k.endpointLatency(ep),
    k.endpointQueued(ep),
    k.rateBucket(ep),
    k.endpointThrottle(ep, 'ep_01J'),
    k.endpointErrors(ep),
    k.pause('endpoint', ep),
    k.pausedQueue('endpoint', ep),
  ];

  it("puts an endpoint's guard keys in one slot, and two endpoints' usually in two", () => {
    expect(slots(endpointKeys(clusterKeys)).size).toBe(1);
    // Without the tags (the single-Redis layout) the same keys spread over the slots.
    expect(slots(endpointKeys(keys)).size).toBeGreaterThan(1);
    expect(slotOf(clusterKeys.inflight(ep))).not.toBe(slotOf(clusterKeys.inflight('0c1d2e3f4a5b')));
  });

  it("keeps a host's, a config's pause, a webhook's and the schedule's keys together", () => {
    expect(slots([clusterKeys.domainInflight('api.example.com'), clusterKeys.domainLimit('api.example.com')]).size).toBe(1);
    expect(slots([clusterKeys.pause('config', 'wh:42'), clusterKeys.pausedQueue('config', 'wh:42')]).size).toBe(1);
    expect(slots([clusterKeys.status('wh_01J'), clusterKeys.statusHistory('wh_01J'), clusterKeys.deadLetter('wh_01J')]).size).toBe(1);
    expect(slots([clusterKeys.retries(), clusterKeys.retryData('wh_1'), clusterKeys.retryData('wh_2')]).size).toBe(1);
    expect(slots([clusterKeys.stats('delivered', '2026120500'), clusterKeys.stats('failed', '2026120501'), clusterKeys.endpointsHll('2026120500')]).size).toBe(1);
    expect(slots([clusterKeys.idempotency('cfg', 'k'), clusterKeys.legacyIdempotency('cfg', 'k')]).size).toBe(1);
    expect(slots([clusterKeys.deadLetterIndex('cfg'), clusterKeys.deadLetterReasonIndex('cfg', 'x')]).size).toBe(1);
  });

  it('builds the same keys the scripts build from a prefix and the id as its tag', () => {
    for (const k of [clusterKeys, namespaced(clusterKeys, 't:1:')]) {
      expect(scriptPrefix(k.circuit('')) + slotId(true, 'h{x}')).toBe(k.circuit('h{x}'));
      expect(scriptPrefix(k.pause('config', '')) + slotId(true, 'wh:42')).toBe(k.pause('config', 'wh:42'));
      expect(`${scriptPrefix(k.status(''))}{wh_1}`).toBe(k.status('wh_1'));
      expect(k.retryData('') + 'wh_1').toBe(k.retryData('wh_1'));
    }
    expect(scriptPrefix(keys.circuit('')) + slotId(false, 'h')).toBe(keys.circuit('h'));
  });

  it('leaves the single-Redis layout as it was', () => {
    expect([keys.status('w'), keys.circuit('h'), keys.retries(), keys.retryData('w'), keys.pause('config', 'c')]).toEqual([
      'status:w',
      'circuit:h',
      'retries',
      'retry_data:w',
      'paused:config:c',
    ]);
  });

  it("keeps each retry shard's keys in one slot, and spreads the shards over the slots", () => {
    for (const s of [0, 7, 15]) {
      const own = [
        clusterKeys.retryShard(s),
        clusterKeys.shardRetryData(s, 'wh_1'),
        clusterKeys.shardConfigRetries(s, 'cfg:a'),
        clusterKeys.shardConfigs(s),
        clusterKeys.retryShardLease(s),
      ];
      expect(slots(own).size).toBe(1);
      // The prefix claimShard-2.lua completes with '{<config>}' is the queue's key.
      expect(`${scriptPrefix(clusterKeys.shardConfigRetries(s, ''))}{cfg:a}`).toBe(clusterKeys.shardConfigRetries(s, 'cfg:a'));
    }
    expect(slots(Array.from({ length: 16 }, (_, s) => clusterKeys.retryShard(s))).size).toBe(16);
    // On one Redis a shard's data key is the key retries always had (the drain need not copy it).
    expect(keys.shardRetryData(3, 'wh_1')).toBe(keys.retryData('wh_1'));
  });

  it('namespaces every key without moving it to another slot', () => {
    const ns = namespaced(clusterKeys, 't:9:');
    expect(ns.inflight(ep)).toBe(`t:9:${clusterKeys.inflight(ep)}`);
    expect(slotOf(ns.inflight(ep))).toBe(slotOf(clusterKeys.inflight(ep)));
    expect(slotOf(ns.retryData('w'))).toBe(slotOf(ns.retries()));
  });
});

describe('redis.cluster_nodes', () => {
  it('reads HOWK_REDIS_CLUSTER_NODES as a list of host:port (IPv6 in brackets)', () => {
    expect(loadConfig({ env: { HOWK_REDIS_CLUSTER_NODES: '10.0.0.1:7000,10.0.0.2:7001' } }).redis.cluster_nodes).toEqual(['10.0.0.1:7000', '10.0.0.2:7001']);
    expect(loadConfig({ env: {} }).redis.cluster_nodes).toEqual([]);
    expect(parseNode('[::1]:7000')).toEqual({ host: '::1', port: 7000 });
    expect(() => parseNode('redis.internal')).toThrow(/host:port/);
  });

  it('takes the per-host limit and its overrides on a cluster (kept in two steps), as on one Redis', () => {
    const on = { HOWK_REDIS_CLUSTER_NODES: '127.0.0.1:7000' };
    expect(loadConfig({ env: { ...on, HOWK_CONCURRENCY_MAX_INFLIGHT_PER_DOMAIN: '5' } }).concurrency.max_inflight_per_domain).toBe(5);
    expect(loadConfig({ env: { ...on, HOWK_CONCURRENCY_DOMAIN_OVERRIDES: '{"a.example":3}' } }).concurrency.domain_overrides).toEqual({ 'a.example': 3 });
    expect(loadConfig({ env: { ...on, HOWK_API_MAX_OUTSTANDING_PER_CONFIG: '100' } }).api.max_outstanding_per_config).toBe(100);
    expect(loadConfig({ env: { HOWK_CONCURRENCY_MAX_INFLIGHT_PER_DOMAIN: '5' } }).concurrency.max_inflight_per_domain).toBe(5);
  });
});
