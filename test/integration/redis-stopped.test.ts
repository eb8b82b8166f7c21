import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireEnv, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { freePort } from '../helpers/procs';

// A redis-server of this test's own killed with SIGKILL mid-stream (its port then refuses
// connections, unlike the frozen one of redis-degraded.test.ts) for 12 s, with the worker looking
// up ended statuses as howk-worker does: webhooks queued before and enqueued during the outage
// are delivered during it, within the local bounds and a Svix endpoint's throttleRate; after
// Redis is back (empty, rebuilt from Kafka) nothing is lost or sent twice and statuses catch up
// (docs/RELIABILITY.md, "Redis unreachable: delivery degrades, it does not stop").

const OUTAGE_MS = 12_000;
const PER_ENDPOINT = 2;
const DELAY_MS = 100;
const THROTTLE = 4;
const MESSAGES = 60;

type Seen = { path: string; id: string; start: number; end: number; pathInflight: number };

const receiver = async () => {
  const seen: Seen[] = [];
  const inflight = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    const start = Date.now();
    inflight.set(path, (inflight.get(path) ?? 0) + 1);
    const pathInflight = inflight.get(path)!;
    req.resume();
    req.on('end', () =>
      setTimeout(() => {
        inflight.set(path, inflight.get(path)! - 1);
        seen.push({ path, id: String(req.headers['webhook-id']), start, end: Date.now(), pathInflight });
        res.writeHead(200).end();
      }, DELAY_MS),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { url: (p: string) => `http://127.0.0.1:${port}${p}`, seen, close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))) };
};

describe('Redis stopped (connection refused) for 12 s: delivery degrades, it does not stop', () => {
  let port: number;
  let rx: Awaited<ReturnType<typeof receiver>>;
  let f: TestFleet | undefined;
  const infra = (cmd: string) =>
    execFileSync('bash', ['scripts/infra/redis.sh', cmd], { env: { ...process.env, REDIS_PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] }).toString();

  beforeAll(async () => {
    requireEnv('REDIS_URL');
    port = await freePort();
    infra('start');
    rx = await receiver();
  });
  afterAll(async () => {
    try {
      // Bounded: a fleet that cannot stop must not leave this test's redis-server running.
      await Promise.race([f?.stop(), new Promise((r) => setTimeout(r, 60_000))]);
    } finally {
      infra('stop');
      await rx?.close();
    }
  }, 120_000);

  it('delivers what was queued before and enqueued during the outage, keeps the bounds and the throttleRate, then loses and repeats nothing', async () => {
    const saved = process.env.REDIS_URL;
    process.env.REDIS_URL = `redis://127.0.0.1:${port}`;
    try {
      f = await startTestFleet('kafka', {
        redisDb: 1,
        endedLookup: true,
        overrides: {
          'api.auth.enabled': true,
          'rate_limit.rate': 0,
          'reconciler.sentinel_interval': 1000,
          'degraded.max_inflight_per_endpoint': PER_ENDPOINT,
          'degraded.max_inflight_per_host': 8,
          'kafka.per_key_parallelism': 4,
        },
      });
    } finally {
      process.env.REDIS_URL = saved;
    }
    const fleet = f;
    await Promise.all([fleet.fleet.security!.ready, fleet.fleet.apps!.ready]);
    const auth = { authorization: `Bearer ${(await fleet.fleet.security!.keys!.create({ scopes: ['admin'] })).key}` };
    const accepted = new Set<string>();
    const enqueue = async (path: string, n: number, into: Set<string>) => {
      for (let c = 0; c < 4; c++) {
        const webhooks = Array.from({ length: n / 4 }, (_, i) => ({ endpoint: rx.url(path), payload: { c, i } }));
        const res = await fleet.post(`/webhooks/stopped-${c}/enqueue/batch`, { webhooks }, auth);
        expect(res.status).toBe(202);
        for (const r of ((await res.json()) as { results: { webhook_id: string }[] }).results) {
          into.add(r.webhook_id);
          accepted.add(r.webhook_id);
        }
      }
    };
    const svix = async (path: string, body: unknown) => {
      const res = await fleet.post(`/api/v1${path}`, body, auth);
      expect(res.status, `${path}: ${res.status}`).toBeLessThan(300);
      return (await res.json()) as { id: string };
    };
    const okIds = () => new Set(rx.seen.map((s) => s.id));

    await enqueue('/warm', 8, new Set());
    await waitFor(() => okIds().size >= 8, { what: 'deliveries before the outage' });
    // A Svix endpoint with throttleRate 4/s and 60 messages: most of them still queued at the stop.
    const app = await svix('/app', { name: 'Stopped' });
    await svix(`/app/${app.id}/endpoint`, { url: rx.url('/throttled'), throttleRate: THROTTLE });
    for (let i = 0; i < MESSAGES; i += 6) await Promise.all(Array.from({ length: 6 }, (_, k) => svix(`/app/${app.id}/msg`, { eventType: 'x', payload: { i: i + k } })));
    // 120 to one endpoint: 6 s of them at the local bound (2 in flight, 100 ms each).
    const before = new Set<string>();
    await enqueue('/busy-a', 120, before);

    execFileSync('bash', ['scripts/infra/redis.sh', 'kill9'], { env: { ...process.env, REDIS_PORT: String(port) }, stdio: 'ignore' });
    const downAt = Date.now();
    // Accepted at the door (Kafka is up), whatever Redis does.
    const during = new Set<string>();
    await enqueue('/busy-b', 120, during);
    await new Promise((r) => setTimeout(r, Math.max(0, downAt + OUTAGE_MS - Date.now())));
    const upAt = Date.now();
    infra('start'); // empty: the sentinel sees the canary gone and rebuilds from Kafka

    // Within the outage, after the few seconds it takes to be noticed (docs/RELIABILITY.md).
    const inOutage = rx.seen.filter((s) => s.start > downAt + 2000 && s.end < upAt);
    const ids = new Set(inOutage.map((s) => s.id));
    const throttled = rx.seen.filter((s) => s.path === '/throttled').map((s) => s.start);
    console.log(
      `redis stopped ${upAt - downAt} ms: delivered during it ${inOutage.length} (queued before ${[...before].filter((id) => ids.has(id)).length}, enqueued during ${[...during].filter((id) => ids.has(id)).length}, throttled ${inOutage.filter((s) => s.path === '/throttled').length})`,
    );
    expect([...before].filter((id) => ids.has(id)).length, 'queued before the stop, delivered during the outage').toBeGreaterThan(0);
    expect([...during].filter((id) => ids.has(id)).length, 'enqueued during the outage, delivered during it').toBeGreaterThan(0);
    // Reported, not asserted: a throttled webhook parked before the stop waits in Redis's retry
    // schedule, so how many of them a worker still holds at the stop depends on timing (0 in a
    // quiet CI run, 33 on a busy machine, same code). The bound below is what must hold.
    expect(Math.max(...inOutage.map((s) => s.pathInflight)), 'in flight per endpoint during the outage').toBeLessThanOrEqual(PER_ENDPOINT);
    // The throttleRate holds across the whole run: never more than rate + burst (the rate) in a second.
    for (const t of throttled) expect(throttled.filter((x) => x >= t && x < t + 1000).length, 'throttled requests in a second').toBeLessThanOrEqual(2 * THROTTLE);

    await waitFor(() => [...accepted].every((id) => okIds().has(id)) && rx.seen.filter((s) => s.path === '/throttled').length >= MESSAGES, {
      what: 'every webhook delivered',
      timeoutMs: 90_000,
      intervalMs: 250,
    });
    // 0 lost, 0 sent twice: one request per webhook.
    const n = new Map<string, number>();
    for (const s of rx.seen) n.set(s.id, (n.get(s.id) ?? 0) + 1);
    expect([...n].filter(([, k]) => k > 1)).toEqual([]);
    expect(new Set(rx.seen.filter((s) => s.path === '/throttled').map((s) => s.id)).size).toBe(MESSAGES);
    // The statuses of what went out during the outage were owed; Redis has them now.
    const sample = [...ids].filter((id) => accepted.has(id)).slice(0, 30);
    await waitFor(
      async () => {
        for (const id of sample) {
          const st = (await (await fetch(`${fleet.baseUrl}/webhooks/${id}/status`, { headers: auth })).json()) as { state?: string };
          if (st.state !== 'delivered') return false;
        }
        return true;
      },
      { what: 'statuses of the deliveries made during the outage', timeoutMs: 30_000, intervalMs: 250 },
    );
  }, 240_000);
});
