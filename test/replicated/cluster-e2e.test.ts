import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { TEST_SECRET } from '../helpers/fleet';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { redisCluster } from './redis-cluster';

// howk-api, howk-worker and howk-scheduler as processes on a real Redis Cluster
// (redis.cluster_nodes; test/replicated/redis-cluster.ts) and the real Kafka: every accepted
// webhook arrives, a quarter of them only after a retry (their first attempt answers 500), and
// each one's status says so. Ids are unique to the run (config ids, endpoints, webhook ids),
// so a shared cluster is not disturbed; nothing is flushed.
describe('api + worker + scheduler on a Redis Cluster', () => {
  const N = 200;
  let rx: Receiver;
  let env: Record<string, string>;
  let api: string;
  const procs: Proc[] = [];
  const firstSeen = new Set<string>();

  beforeAll(async () => {
    await redisCluster.start();
    const p = uniq('rc');
    const port = await freePort();
    env = {
      HOWK_API_PORT: String(port),
      HOWK_API_HOST: '127.0.0.1',
      HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
      HOWK_REDIS_CLUSTER_NODES: redisCluster.nodes().join(','),
      ...Object.fromEntries(
        ['pending', 'slow', 'results', 'deadletter', 'state', 'scripts', 'keys', 'config_secrets', 'guards'].map((t) => [`HOWK_KAFKA_TOPICS_${t.toUpperCase()}`, `${p}.${t}`]),
      ),
      // The receiver is on loopback and this test is not about API keys.
      HOWK_DELIVERY_ALLOWED_NETWORKS: '127.0.0.0/8,::1/128',
      HOWK_API_AUTH_ENABLED: 'false',
      HOWK_KAFKA_CONSUMER_GROUP: `${p}-workers`,
      HOWK_KAFKA_PARTITIONS: '4',
      HOWK_SIGNING_DEFAULT_SECRET: TEST_SECRET,
      HOWK_RETRY_BASE_DELAY: '200ms',
      HOWK_SCHEDULER_POLL_INTERVAL: '100ms',
      HOWK_LOG_LEVEL: 'warn',
    };
    // The first attempt of every webhook whose n is a multiple of 4 fails: the scheduler retries it.
    rx = await startReceiver((r) => {
      const id = String(r.headers['webhook-id']);
      const n = (JSON.parse(r.body.toString()) as { n: number }).n;
      const first = !firstSeen.has(id);
      firstSeen.add(id);
      return { status: n % 4 === 0 && first ? 500 : 200 };
    });
    procs.push(spawnRole('api', env), spawnRole('scheduler', env), spawnRole('worker', env));
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

  it('delivers every accepted webhook, the failed ones after a retry, and none is lost', async () => {
    const accepted = new Map<string, number>();
    const tenant = uniq('t');
    for (let b = 0; b < N / 50; b++) {
      const webhooks = Array.from({ length: 50 }, (_, i) => ({ endpoint: rx.url(`/e${(b * 50 + i) % 9}`), payload: { n: b * 50 + i } }));
      const res = await fetch(`${api}/webhooks/${tenant}-${b % 3}/enqueue/batch`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ webhooks }),
      });
      expect(res.status).toBe(202);
      ((await res.json()) as { results: { webhook_id: string }[] }).results.forEach((r, i) => accepted.set(r.webhook_id, b * 50 + i));
    }
    expect(accepted.size).toBe(N);
    const delivered = () => new Set(rx.received.map((r) => String(r.headers['webhook-id'])));
    const outcome = async (id: string) => (await (await fetch(`${api}/webhooks/${id}/status`)).json()) as { state: string; attempts: number };
    await waitFor(
      async () => {
        for (const id of accepted.keys()) if (!delivered().has(id)) return false;
        for (const [id, n] of accepted) if (n % 4 === 0 && (rx.byWebhook().get(id)?.length ?? 0) < 2) return false;
        return true;
      },
      { timeoutMs: 120_000, what: `all ${N} delivered (${delivered().size} so far)\n${procs.map((p) => p.output().slice(-2000)).join('\n')}` },
    );
    // The statuses on the cluster: each delivered, the retried ones on their second attempt.
    await waitFor(
      async () => {
        for (const [id, n] of accepted) {
          const s = await outcome(id);
          if (s.state !== 'delivered' || s.attempts !== (n % 4 === 0 ? 2 : 1)) return false;
        }
        return true;
      },
      { timeoutMs: 60_000, what: 'every status delivered' },
    );
    // The listing (indexes in each config's slot) agrees: every webhook of a config, delivered.
    for (let c = 0; c < 3; c++) {
      const ofConfig = [...accepted.keys()].filter((_, i) => Math.floor(i / 50) % 3 === c).sort();
      const page = (await (await fetch(`${api}/webhooks?config_id=${tenant}-${c}&state=delivered&limit=500`)).json()) as { items: { webhook_id: string }[] };
      expect(page.items.map((w) => w.webhook_id).sort()).toEqual(ofConfig);
    }
    const lost = [...accepted.keys()].filter((id) => !delivered().has(id));
    expect(lost).toEqual([]);
    expect([...accepted.values()].filter((n) => n % 4 === 0).length).toBe(N / 4);
  });

  it('answers an enqueue that waits for its first attempt (the outcome crosses the cluster by pub/sub)', async () => {
    const res = await fetch(`${api}/webhooks/${uniq('w')}/enqueue?wait=10s`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint: rx.url('/wait'), payload: { n: 1 } }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'delivered', outcome: { status_code: 200 } });
  });
});
