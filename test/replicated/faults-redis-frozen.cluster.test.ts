import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chaosReceiver, startClient, type Receiver } from '../chaos/harness';
import { requireEnv, waitFor } from '../helpers/env';
import { faultFigures, faultFleet, faultRedisCluster, formatFault, sleep, type FaultFleet } from './faults';

// The whole Redis Cluster unreachable: every node SIGSTOPped (connections stay open, nothing
// answers, as across a network partition) for OUTAGE_MS under a steady stream of webhooks,
// then SIGCONT. Workers deliver on in degraded mode (docs/RELIABILITY.md, "Redis unreachable")
// or resume after; every accepted webhook is delivered. On a cluster of this file's own
// (test/replicated/faults.ts). Figures in docs/RELIABILITY.md, "Faults on a replicated Kafka
// and a Redis Cluster".

const N = 2000;
const PACE = { perSecond: 100, batch: 50 };
const OUTAGE_MS = Number(process.env.HOWK_FAULT_REDIS_OUTAGE_MS ?? 30_000);
const MAX_DUPLICATE_SHARE = 0.02;

describe('the whole Redis Cluster frozen mid-stream', () => {
  const redis = faultRedisCluster();
  let rx: Receiver;
  let fleet: FaultFleet | undefined;
  let frozen = false;

  beforeAll(async () => {
    await redis.start();
    rx = await chaosReceiver();
  }, 120_000);

  afterAll(async () => {
    if (frozen) redis.signalAll('SIGCONT');
    await fleet?.stop();
    await rx?.close();
    await redis.stop();
  }, 120_000);

  it(`delivers every accepted webhook through ${OUTAGE_MS / 1000} s of a cluster that answers nothing`, async () => {
    const start = Date.now();
    fleet = await faultFleet('redis-frozen', { HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'), HOWK_REDIS_CLUSTER_NODES: redis.nodes.join(',') });
    const client = startClient(fleet, rx, N, { ok: 8, flaky: 2 }, 4, PACE);
    await waitFor(() => client.accepted.size >= N / 4, { timeoutMs: 120_000, what: 'a quarter accepted' });
    const faultAt = Date.now();
    redis.signalAll('SIGSTOP');
    frozen = true;
    const acceptedBefore = client.accepted.size;
    await sleep(OUTAGE_MS);
    const thawAt = Date.now();
    redis.signalAll('SIGCONT');
    frozen = false;
    const during = { accepted: client.accepted.size - acceptedBefore, delivered: rx.okBetween(faultAt, thawAt), refused: client.refusals.filter((r) => r.at >= faultAt).length };
    const f = await faultFigures(fleet, 'redis cluster frozen', client, rx, { start, fault: faultAt }, { outage_ms: thawAt - faultAt });
    f.notes.accepted_during_outage = during.accepted;
    f.notes.delivered_during_outage = during.delivered;
    f.notes.refused_during_outage = during.refused;
    const after = rx.firstOkAfter(thawAt);
    f.notes.first_delivery_after_thaw_ms = after === undefined ? -1 : after - thawAt;
    f.notes.refusals = [...new Set(client.refusals.map((r) => `${r.status}:${r.retryAfter ? 'retry-after' : 'none'}`))].join(',') || 'none';
    await waitFor(async () => (await redis.masters()).length === 3 && (await redis.stateOk(redis.ports[0]!)), { timeoutMs: 30_000, what: 'the cluster ok again' });
    console.log(formatFault(f));

    expect(f.lost, `${formatFault(f)}\n${fleet.output()}`).toBe(0);
    expect(f.sent).toBe(N);
    expect(f.duplicates).toBeLessThanOrEqual(Math.floor(N * MAX_DUPLICATE_SHARE));
    expect(f.first_delivery_after_fault_ms).toBeGreaterThanOrEqual(0);
  }, 480_000);
});
