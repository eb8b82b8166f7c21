import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { TEST_SECRET } from '../helpers/fleet';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { redisCluster } from './redis-cluster';

// The per-host in-flight limit on a real Redis Cluster, through the processes: two workers
// with HOWK_CONCURRENCY_MAX_INFLIGHT_PER_DOMAIN=2 deliver to three endpoints of one host
// (127.0.0.1, three paths: three endpoint slots) that answer slowly. The host never has more
// than 2 at once, and every webhook arrives (completions and renewals free the host's places).
// Ids are unique to the run; nothing is flushed.
describe('the per-host in-flight limit on a Redis Cluster (api + 2 workers)', () => {
  const N = 24;
  let rx: Receiver;
  let api: string;
  const procs: Proc[] = [];
  const onWire = new Map<string, number>();
  let peak = 0;

  beforeAll(async () => {
    await redisCluster.start();
    const p = uniq('hl');
    const port = await freePort();
    const env = {
      HOWK_API_PORT: String(port),
      HOWK_API_HOST: '127.0.0.1',
      HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
      HOWK_REDIS_CLUSTER_NODES: redisCluster.nodes().join(','),
      ...Object.fromEntries(
        ['pending', 'slow', 'results', 'deadletter', 'state', 'scripts', 'keys', 'config_secrets', 'guards'].map((t) => [`HOWK_KAFKA_TOPICS_${t.toUpperCase()}`, `${p}.${t}`]),
      ),
      HOWK_DELIVERY_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
      HOWK_API_AUTH_ENABLED: 'false',
      HOWK_KAFKA_CONSUMER_GROUP: `${p}-workers`,
      HOWK_KAFKA_PARTITIONS: '4',
      HOWK_SIGNING_DEFAULT_SECRET: TEST_SECRET,
      HOWK_CONCURRENCY_MAX_INFLIGHT_PER_DOMAIN: '2',
      HOWK_LOG_LEVEL: 'warn',
    };
    // Distinct webhooks at the receiver at once: a copy of a webhook a rebalance moved while its
    // first copy was on the wire takes that copy's lease over (as on one Redis), so it is one
    // delivery for the host limit, not two. Removed just before the receiver answers.
    rx = await startReceiver((r) => {
      const id = String(r.headers['webhook-id']);
      onWire.set(id, (onWire.get(id) ?? 0) + 1);
      peak = Math.max(peak, onWire.size);
      setTimeout(() => {
        const n = onWire.get(id)! - 1;
        if (n) onWire.set(id, n);
        else onWire.delete(id);
      }, 250);
      return { status: 200, delayMs: 250 };
    });
    procs.push(spawnRole('api', env), spawnRole('worker', env), spawnRole('worker', env));
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined))?.status === 200, {
      timeoutMs: 90_000,
      what: `howk-api ready\n${procs[0]!.output()}`,
    });
    api = `http://127.0.0.1:${port}`;
  }, 240_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => stopProc(p)));
    await rx?.close();
    await redisCluster.stop();
  }, 120_000);

  it('never has more than 2 deliveries in flight to the host, and delivers every webhook', async () => {
    // Six configs (the partition key): the webhooks spread over the partitions and both workers.
    const tenant = uniq('t');
    const ids: string[] = [];
    for (let c = 0; c < 6; c++) {
      const webhooks = Array.from({ length: N / 6 }, (_, i) => ({ endpoint: rx.url(`/h${i % 3}`), payload: { n: c * 10 + i } }));
      const res = await fetch(`${api}/webhooks/${tenant}-${c}/enqueue/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ webhooks }),
      });
      expect(res.status).toBe(202);
      ids.push(...((await res.json()) as { results: { webhook_id: string }[] }).results.map((r) => r.webhook_id));
    }
    expect(ids).toHaveLength(N);
    const delivered = () => new Set(rx.received.map((r) => String(r.headers['webhook-id'])));
    await waitFor(async () => ids.every((id) => delivered().has(id)), {
      timeoutMs: 120_000,
      what: `all ${N} delivered (${delivered().size} so far)\n${procs.map((p) => p.output().slice(-2000)).join('\n')}`,
    });
    console.log(`peak at the host: ${peak} webhooks (${rx.maxInflight()} requests), received ${rx.received.length} of ${N}`);
    // The limit was reached (the host was the bound), never passed.
    expect(peak).toBe(2);
    expect(new Set(rx.received.map((r) => r.path))).toEqual(new Set(['/h0', '/h1', '/h2']));
  });
});
