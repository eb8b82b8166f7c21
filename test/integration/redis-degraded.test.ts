import { freePort } from '../helpers/procs';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointHash } from '../../core/domain/ids';
import { requireEnv, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';

// Redis unreachable for 12 s under traffic (a redis-server of this test's own, frozen with
// SIGSTOP so that connections hang as on a lost network): the worker keeps delivering within
// its local bounds (degraded.*), a paused endpoint stays paused, an open circuit stays open,
// nothing is lost or sent twice, and statuses and listings catch up once Redis answers
// (docs/RELIABILITY.md, "Redis unreachable: delivery degrades, it does not stop").

const OUTAGE_MS = 12_000;
const PER_ENDPOINT = 2;
const PER_HOST = 4;
const DELAY_MS = 120;

type Seen = { path: string; id: string; status: number; start: number; end: number; pathInflight: number; hostInflight: number };

/** A loopback receiver that records, for each request, how many of its path (and of all paths) were in flight when it came. */
const receiver = async (statusOf: (path: string, nth: number) => number) => {
  const seen: Seen[] = [];
  const inflight = new Map<string, number>();
  const nth = new Map<string, number>();
  let all = 0;
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    const start = Date.now();
    inflight.set(path, (inflight.get(path) ?? 0) + 1);
    all++;
    const pathInflight = inflight.get(path)!;
    const hostInflight = all;
    req.resume();
    req.on('end', () => {
      const n = (nth.get(path) ?? 0) + 1;
      nth.set(path, n);
      const status = statusOf(path, n);
      setTimeout(() => {
        inflight.set(path, inflight.get(path)! - 1);
        all--;
        seen.push({ path, id: String(req.headers['webhook-id']), status, start, end: Date.now(), pathInflight, hostInflight });
        res.writeHead(status).end();
      }, DELAY_MS);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return { url: (p: string) => `http://127.0.0.1:${port}${p}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
};

/** Whether GET /webhooks/:id/status says delivered for each. */
const allDelivered = async (baseUrl: string, ids: string[]): Promise<boolean> => {
  for (const id of ids) {
    const st = (await (await fetch(`${baseUrl}/webhooks/${id}/status`)).json()) as { state?: string };
    if (st.state !== 'delivered') return false;
  }
  return true;
};

/** Adds the config's webhooks GET /webhooks lists as delivered to `into` (every page). */
const listDelivered = async (baseUrl: string, configId: string, into: Set<string>): Promise<void> => {
  let cursor: string | null = null;
  do {
    const res = await fetch(`${baseUrl}/webhooks?config_id=${configId}&state=delivered&limit=500${cursor ? `&cursor=${cursor}` : ''}`);
    const body = (await res.json()) as { items: { webhook_id: string }[]; next_cursor: string | null };
    for (const it of body.items) into.add(it.webhook_id);
    cursor = body.next_cursor;
  } while (cursor);
};

describe('Redis unreachable for 12 s: delivery degrades, it does not stop', () => {
  let port: number;
  let rx: Awaited<ReturnType<typeof receiver>>;
  let f: TestFleet | undefined;
  const infra = (cmd: string) =>
    execFileSync('bash', ['scripts/infra/redis.sh', cmd], { env: { ...process.env, REDIS_PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
  const pid = () => Number(readFileSync(`/tmp/howk-redis-${port}/redis.pid`, 'utf8').trim());

  beforeAll(async () => {
    requireEnv('REDIS_URL');
    port = await freePort();
    infra('start');
    // The first 3 requests to /broken fail (they open its circuit); every later one succeeds.
    rx = await receiver((path, n) => (path === '/broken' && n <= 3 ? 500 : 200));
  });
  afterAll(async () => {
    try {
      process.kill(pid(), 'SIGCONT');
    } catch {
      /* running or gone */
    }
    try {
      // Bounded: a fleet that cannot stop must not leave this test's redis-server running.
      await Promise.race([f?.stop(), new Promise((r) => setTimeout(r, 60_000))]);
    } finally {
      infra('stop');
      await rx?.close();
    }
  }, 120_000);

  it('keeps delivering within the local bounds, holds pauses and open circuits, loses and repeats nothing, and statuses catch up', async () => {
    const saved = process.env.REDIS_URL;
    process.env.REDIS_URL = `redis://127.0.0.1:${port}`;
    try {
      // A fixed db on this test's own Redis server: the allocator leases dbs of the shared one.
      f = await startTestFleet('kafka', {
        redisDb: 1,
        overrides: {
          'redis.command_timeout': 400,
          'circuit_breaker.failure_threshold': 3,
          'circuit_breaker.recovery_timeout': 20_000,
          'circuit_breaker.probe_interval': 1000,
          'circuit_breaker.success_threshold': 1,
          'degraded.max_inflight_per_endpoint': PER_ENDPOINT,
          'degraded.max_inflight_per_host': PER_HOST,
          'kafka.per_key_parallelism': 4,
        },
      });
    } finally {
      process.env.REDIS_URL = saved;
    }
    const fleet = f;
    const accepted = new Map<string, { path: string; config: number }>();
    const enqueue = async (path: string, n: number, configs = 4) => {
      for (let c = 0; c < configs; c++) {
        const count = Math.ceil(n / configs);
        const res = await fleet.post(`/webhooks/degraded-${c}/enqueue/batch`, {
          webhooks: Array.from({ length: count }, (_, i) => ({ endpoint: rx.url(path), payload: { c, i } })),
        });
        expect(res.status).toBe(202);
        for (const r of ((await res.json()) as { results: { webhook_id: string }[] }).results) accepted.set(r.webhook_id, { path, config: c });
      }
    };
    const okIds = () => new Set(rx.seen.filter((s) => s.status < 300).map((s) => s.id));

    // Before the outage: traffic flows, /paused is paused, /broken's circuit opens.
    await enqueue('/warm', 8);
    await waitFor(() => okIds().size >= 8, { what: 'deliveries before the outage' });
    const pausedHash = await endpointHash(rx.url('/paused'));
    expect((await fleet.post(`/endpoints/${pausedHash}/pause`, {})).status).toBe(200);
    await enqueue('/broken', 3, 1);
    const brokenHash = await endpointHash(rx.url('/broken'));
    await waitFor(async () => ((await (await fetch(`${fleet.baseUrl}/endpoints/${brokenHash}`)).json()) as { circuit: { state: string } }).circuit.state === 'OPEN', {
      what: "/broken's circuit open",
      timeoutMs: 20_000,
    });

    process.kill(pid(), 'SIGSTOP');
    const downAt = Date.now();
    // Accepted at the door as today (Kafka is up), whatever Redis does.
    await enqueue('/paused', 4, 2);
    await enqueue('/broken', 4, 2);
    await enqueue('/busy-a', 60);
    await enqueue('/busy-b', 60);
    await new Promise((r) => setTimeout(r, Math.max(0, downAt + OUTAGE_MS - Date.now())));
    const upAt = Date.now();
    process.kill(pid(), 'SIGCONT');

    // 2 s for the outage to be noticed (each hung call waits out redis.command_timeout).
    const during = rx.seen.filter((s) => s.start > downAt + 2000 && s.end < upAt);
    const busyDuring = during.filter((s) => s.path.startsWith('/busy-'));
    console.log(
      `redis unreachable ${OUTAGE_MS} ms: ${busyDuring.length} delivered during the outage; most in flight per endpoint ${Math.max(0, ...during.map((s) => s.pathInflight))}, per host ${Math.max(0, ...during.map((s) => s.hostInflight))}`,
    );
    expect(busyDuring.length, 'deliveries during the outage').toBeGreaterThanOrEqual(20);
    expect(Math.max(...during.map((s) => s.pathInflight)), 'in flight per endpoint during the outage').toBeLessThanOrEqual(PER_ENDPOINT);
    expect(Math.max(...during.map((s) => s.hostInflight)), 'in flight per host during the outage').toBeLessThanOrEqual(PER_HOST);
    // The pause and the open circuit held: nothing reached either endpoint while Redis was away.
    expect(rx.seen.filter((s) => s.path === '/paused')).toHaveLength(0);
    expect(rx.seen.filter((s) => s.path === '/broken' && s.start > downAt)).toHaveLength(0);

    // Redis answers again: the pause still holds until the operator resumes.
    const deliveredDuring = [...new Set(busyDuring.map((s) => s.id))];
    await waitFor(() => allDelivered(fleet.baseUrl, deliveredDuring.slice(0, 40)), {
      what: 'statuses of the deliveries made during the outage',
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    const busyIds = [...accepted].filter(([, a]) => a.path.startsWith('/busy-') || a.path === '/warm').map(([id]) => id);
    await waitFor(() => busyIds.every((id) => okIds().has(id)), { what: 'every webhook of the open endpoints', timeoutMs: 60_000 });
    expect(rx.seen.filter((s) => s.path === '/paused')).toHaveLength(0);
    expect((await fleet.post(`/endpoints/${pausedHash}/resume`, {})).status).toBe(200);
    // The circuit's probe comes at its recovery time (20 s after it opened), then the rest.
    await waitFor(() => [...accepted.keys()].every((id) => okIds().has(id)), { what: `all ${accepted.size} webhooks delivered`, timeoutMs: 90_000, intervalMs: 250 });
    // 0 lost, 0 sent twice: one 2xx per webhook.
    const oks = new Map<string, number>();
    for (const s of rx.seen) if (s.status < 300) oks.set(s.id, (oks.get(s.id) ?? 0) + 1);
    const twice = [...oks].filter(([, n]) => n > 1).map(([id]) => id);
    if (twice.length) console.log('sent twice', JSON.stringify(rx.seen.filter((s) => twice.includes(s.id)).map((s) => ({ ...s, downAt, upAt }))));
    expect(twice).toHaveLength(0);
    // The listing shows them delivered.
    const listed = new Set<string>();
    for (let c = 0; c < 4; c++) await listDelivered(fleet.baseUrl, `degraded-${c}`, listed);
    expect(deliveredDuring.filter((id) => !listed.has(id))).toEqual([]);
  }, 240_000);
});
