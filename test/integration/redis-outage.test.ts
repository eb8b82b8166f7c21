import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireEnv, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Redis unreachable for 5 s during traffic (a dedicated redis-server, frozen with SIGSTOP so
// that connections hang as on a real outage), with degraded delivery off (degraded.enabled =
// false; on, the default, is test/integration/redis-degraded.test.ts). Nothing is lost either
// way; with the circuit breaker on, deliveries wait (fail closed); with it off, the penalty box
// lets them through (fail open).
const PORT = 16396;
const infra = (cmd: string) =>
  execFileSync('bash', ['scripts/infra/redis.sh', cmd], { env: { ...process.env, REDIS_PORT: String(PORT) }, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
const pid = () => Number(readFileSync(`/tmp/howk-redis-${PORT}/redis.pid`, 'utf8').trim());

describe('Redis down for 5 s during traffic, degraded delivery off', () => {
  let rx: Receiver;
  beforeAll(async () => {
    requireEnv('REDIS_URL');
    infra('start');
    rx = await startReceiver(() => ({ status: 200 }));
  });
  afterAll(async () => {
    try {
      process.kill(pid(), 'SIGCONT');
    } catch {
      /* already running or gone */
    }
    infra('stop');
    await rx?.close();
  });

  const run = async (circuit: boolean, path: string) => {
    process.env.REDIS_URL_OUTAGE = `redis://127.0.0.1:${PORT}`;
    const saved = process.env.REDIS_URL;
    process.env.REDIS_URL = process.env.REDIS_URL_OUTAGE;
    let f: TestFleet;
    try {
      // A fixed db on this test's own Redis server: the allocator leases dbs of the shared one.
      f = await startTestFleet('kafka', { redisDb: 1, overrides: { 'circuit_breaker.enabled': circuit, 'redis.command_timeout': 400, 'degraded.enabled': false } });
    } finally {
      process.env.REDIS_URL = saved;
    }
    const ids = new Set<string>();
    const send = async (n: number) => {
      const res = await f.post(`/webhooks/outage-${n % 5}/enqueue/batch`, { webhooks: Array.from({ length: 10 }, (_, i) => ({ endpoint: rx.url(path), payload: { n, i } })) });
      expect(res.status).toBe(202);
      for (const r of ((await res.json()) as any).results) ids.add(r.webhook_id);
    };
    for (let n = 0; n < 5; n++) await send(n);
    await waitFor(() => rx.received.filter((r) => r.path === path).length >= 50, { what: 'deliveries before the outage' });
    process.kill(pid(), 'SIGSTOP');
    const stoppedAt = Date.now();
    for (let n = 5; n < 20; n++) {
      const t = Date.now();
      await send(n);
      if (process.env.HOWK_TEST_LOGS) console.log(`send ${n} took ${Date.now() - t} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
    await new Promise((r) => setTimeout(r, Math.max(0, 5000 - (Date.now() - stoppedAt))));
    const resumedAt = Date.now();
    process.kill(pid(), 'SIGCONT');
    await waitFor(() => new Set(rx.received.filter((r) => r.path === path).map((r) => r.headers['webhook-id'])).size >= ids.size, {
      timeoutMs: 90_000,
      what: `all ${ids.size} webhooks after the outage`,
    });
    const got = new Set(rx.received.filter((r) => r.path === path).map((r) => String(r.headers['webhook-id'])));
    for (const id of ids) expect(got.has(id)).toBe(true);
    const duringOutage = rx.received.filter((r) => r.path === path && r.at > stoppedAt + 1500 && r.at < resumedAt).length;
    await f.stop();
    return { sent: ids.size, duringOutage };
  };

  it('circuit on: no webhook lost, and no delivery is made while the circuit cannot be checked (fail closed)', async () => {
    const r = await run(true, '/closed');
    console.log(`redis outage, circuit on: ${r.sent} sent, all delivered, ${r.duringOutage} delivered during the outage`);
    expect(r.duringOutage).toBe(0);
  });

  it('circuit off: no webhook lost, and deliveries go on without the penalty box (fail open)', async () => {
    const r = await run(false, '/open');
    console.log(`redis outage, circuit off: ${r.sent} sent, all delivered, ${r.duringOutage} delivered during the outage`);
    expect(r.duringOutage).toBeGreaterThan(0);
  });
});
