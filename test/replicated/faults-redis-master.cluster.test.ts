import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chaosReceiver, startClient, type Receiver } from '../chaos/harness';
import { requireEnv, waitFor } from '../helpers/env';
import { faultFigures, faultFleet, faultRedisCluster, formatFault, type FaultFleet } from './faults';

// A Redis Cluster master killed with SIGKILL under a steady stream of webhooks, on a cluster of
// this file's own (test/replicated/faults.ts; nodes without persistence, as the scaled set-up
// runs them): its replica is promoted, deliveries resume, every accepted webhook is delivered,
// few twice, and the killed node, restarted empty, rejoins as a replica. Figures in
// docs/RELIABILITY.md, "Faults on a replicated Kafka and a Redis Cluster".

const N = 2000;
const PACE = { perSecond: 100, batch: 50 };
const MAX_DUPLICATE_SHARE = 0.02;
const FAILOVER_MS = 30_000;
const REJOIN_MS = 30_000;

describe('a Redis Cluster master killed with -9 mid-stream', () => {
  const redis = faultRedisCluster();
  let rx: Receiver;
  let fleet: FaultFleet | undefined;

  beforeAll(async () => {
    await redis.start();
    rx = await chaosReceiver();
  }, 120_000);

  afterAll(async () => {
    await fleet?.stop();
    await rx?.close();
    await redis.stop();
  }, 120_000);

  it('fails over to the replica, delivers every accepted webhook, few twice; the killed node rejoins as a replica', async () => {
    const start = Date.now();
    fleet = await faultFleet('redis-master', { HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'), HOWK_REDIS_CLUSTER_NODES: redis.nodes.join(',') });
    const client = startClient(fleet, rx, N, { ok: 8, flaky: 2 }, 4, PACE);
    await waitFor(() => client.accepted.size >= N / 3, { timeoutMs: 120_000, what: 'a third accepted' });
    // The master with the most of Howk's keys (hot state, retries due, leases).
    const masters = await redis.masters();
    const { port: victim, keys } = [...masters].sort((a, b) => b.keys - a.keys)[0]!;
    const faultAt = Date.now();
    await redis.kill9(victim);
    const survivor = redis.ports.find((p) => p !== victim)!;
    await waitFor(async () => (await redis.masters()).length === 3 && (await redis.stateOk(survivor)), {
      timeoutMs: FAILOVER_MS,
      intervalMs: 200,
      what: `a replica of ${victim} promoted`,
    });
    const failoverMs = Date.now() - faultAt;
    const f = await faultFigures(fleet, 'redis master kill -9', client, rx, { start, fault: faultAt }, { victim, victim_keys: keys, failover_ms: failoverMs });
    f.notes.refusals = [...new Set(client.refusals.map((r) => `${r.status}:${r.retryAfter ? 'retry-after' : 'none'}`))].join(',') || 'none';
    f.notes.delivered_during_failover = rx.okBetween(faultAt, faultAt + failoverMs);

    const restartAt = Date.now();
    await redis.restart();
    await waitFor(async () => (await redis.role(victim)) === 'slave', { timeoutMs: REJOIN_MS, intervalMs: 200, what: `${victim} back as a replica` });
    f.notes.rejoin_as_replica_ms = Date.now() - restartAt;
    console.log(formatFault(f));

    expect(f.lost, `${formatFault(f)}\n${fleet.output()}`).toBe(0);
    expect(f.sent).toBe(N);
    expect(f.duplicates).toBeLessThanOrEqual(Math.floor(N * MAX_DUPLICATE_SHARE));
    expect(f.first_delivery_after_fault_ms).toBeGreaterThanOrEqual(0);
    expect((await redis.masters()).map((m) => m.port)).not.toContain(victim);
  }, 480_000);
});
