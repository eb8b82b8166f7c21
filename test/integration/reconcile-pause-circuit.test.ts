import type { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { endpointHash } from '../../core/domain/ids';
import { keys } from '../../core/domain/keys';
import { createRedis } from '../../workers/redis/client';
import { requireEnv, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { flushOwnDb } from '../helpers/redis-db';

// Pauses and open circuits survive a Redis loss (FLUSHDB of this file's own dbs 54, 61-63: the
// shared server is never flushed whole). They are on howk.guards; the sentinel notices the
// loss, the fleet rebuilds, and an endpoint or config paused before it stays paused, its held
// webhooks back behind the pause (none delivered, none lost), and an open circuit stays open
// until its probe.

const FAST_REBUILD = { 'reconciler.sentinel_interval': 250, 'reconciler.restore_delay': 300, 'retry.base_delay': 200, 'retry.max_delay': 1000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('pauses and circuits across a Redis loss (real Kafka + Redis)', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  const start = async (respond: Parameters<typeof startReceiver>[0], overrides: Record<string, unknown>) => {
    const rx: Receiver = await startReceiver(respond);
    cleanups.push(() => rx.close());
    const f: TestFleet = await startTestFleet('kafka', { overrides: { ...FAST_REBUILD, ...overrides } });
    cleanups.push(() => f.stop());
    const db = f.redisDb!;
    const redis: Redis = createRedis(requireEnv('REDIS_URL'), { db });
    cleanups.push(() => redis.quit());
    const loseRedis = async () => {
      expect(await redis.exists(keys.canary())).toBe(1);
      await flushOwnDb(redis, db);
      const t0 = Date.now();
      await waitFor(async () => (await redis.exists(keys.canary())) === 1, { timeoutMs: 60_000, what: 'canary restored by the sentinel' });
      return Date.now() - t0;
    };
    const enqueue = async (configId: string, endpoint: string, n: number, from = 0, maxAttempts = 5) => {
      const res = await f.post(`/webhooks/${configId}/enqueue/batch`, {
        webhooks: Array.from({ length: n }, (_, i) => ({ endpoint, payload: { i: from + i }, max_attempts: maxAttempts })),
      });
      expect(res.status).toBe(202);
      return ((await res.json()) as { results: { webhook_id: string }[] }).results.map((r) => r.webhook_id);
    };
    const view = async (hash: string) => (await (await fetch(`${f.baseUrl}/endpoints/${hash}`)).json()) as any;
    return { rx, f, redis, loseRedis, enqueue, view };
  };

  it('an endpoint paused before the loss stays paused: its held webhooks wait for the resume, then all are delivered once', async () => {
    const { rx, f, loseRedis, enqueue, view } = await start(() => ({ status: 200 }), {});
    const endpoint = rx.url('/paused-ep');
    const hash = await endpointHash(endpoint);
    expect((await f.post(`/endpoints/${hash}/pause`, {})).status).toBe(200);
    const ids = [...(await enqueue('rp-a', endpoint, 10)), ...(await enqueue('rp-b', endpoint, 10, 10))];
    await waitFor(async () => (await view(hash)).parked_while_paused === 20, { what: '20 webhooks held' });

    const ms = await loseRedis();
    expect(await view(hash)).toMatchObject({ paused: true, parked_while_paused: 20 });
    console.log(`paused endpoint across FLUSHDB: canary back in ${ms} ms, 20 held webhooks back behind the pause`);
    // Restored retries would be due after restore_delay (300 ms): give them many times that.
    await sleep(3000);
    ids.push(...(await enqueue('rp-a', endpoint, 5, 20)));
    await waitFor(async () => (await view(hash)).parked_while_paused === 25, { what: 'arrivals after the rebuild held too' });
    expect(rx.received).toHaveLength(0);

    const res = (await (await f.post(`/endpoints/${hash}/resume`, {})).json()) as any;
    expect(res).toMatchObject({ released: 25, drain: 'drained' });
    await waitFor(() => rx.byWebhook().size >= 25, { timeoutMs: 60_000, what: '25 webhooks delivered' });
    await sleep(1000);
    const byId = rx.byWebhook();
    expect([...byId.keys()].sort()).toEqual([...ids].sort());
    expect([...byId.values()].filter((rs) => rs.length > 1)).toEqual([]);
    // Per config, in the order they were enqueued (rp-a: 0-9, then 20-24 after the rebuild; rp-b: 10-19).
    const sent = rx.received.map((r) => (JSON.parse(r.body.toString()) as { i: number }).i);
    expect(sent.filter((i) => i < 10 || i >= 20)).toEqual([...Array.from({ length: 10 }, (_, i) => i), 20, 21, 22, 23, 24]);
    expect(sent.filter((i) => i >= 10 && i < 20)).toEqual(Array.from({ length: 10 }, (_, i) => 10 + i));
    expect(await view(hash)).toMatchObject({ paused: false, draining: false, parked_while_paused: 0 });
  });

  it('webhooks that reach a paused endpoint between the loss and the rebuild are held too, not delivered', async () => {
    // A sentinel that looks every 4 s: a window in which Redis is empty and the workers run.
    const { rx, f, redis, enqueue, view } = await start(() => ({ status: 200 }), { 'reconciler.sentinel_interval': 4000 });
    const endpoint = rx.url('/window');
    const hash = await endpointHash(endpoint);
    expect((await f.post(`/endpoints/${hash}/pause`, {})).status).toBe(200);
    const ids = await enqueue('rw', endpoint, 5);
    await waitFor(async () => (await view(hash)).parked_while_paused === 5, { what: '5 webhooks held' });
    await flushOwnDb(redis, f.redisDb!);
    ids.push(...(await enqueue('rw', endpoint, 5, 5)));
    await waitFor(async () => (await redis.exists(keys.canary())) === 1, { timeoutMs: 60_000, what: 'canary restored by the sentinel' });
    await waitFor(async () => (await view(hash)).parked_while_paused === 10, { what: 'the 5 arrivals of the window held behind the 5 restored' });
    expect(rx.received).toHaveLength(0);
    expect(((await (await f.post(`/endpoints/${hash}/resume`, {})).json()) as any).released).toBe(10);
    await waitFor(() => rx.byWebhook().size >= 10, { timeoutMs: 60_000, what: '10 webhooks delivered' });
    expect([...rx.byWebhook().keys()].sort()).toEqual([...ids].sort());
    expect(rx.received.map((r) => (JSON.parse(r.body.toString()) as { i: number }).i)).toEqual(Array.from({ length: 10 }, (_, i) => i));
  });

  it('a config paused before the loss stays paused; after the resume every webhook is delivered', async () => {
    const { rx, f, loseRedis, enqueue } = await start(() => ({ status: 200 }), {});
    const scope = { kind: 'config' as const, id: 'rp-cfg' };
    const held = async () => (await f.guards.peekHeld(scope, 1000)).length;
    expect((await f.post('/configs/rp-cfg/pause', {})).status).toBe(200);
    const ids = [...(await enqueue('rp-cfg', rx.url('/c1'), 8)), ...(await enqueue('rp-cfg', rx.url('/c2'), 8))];
    await waitFor(async () => (await held()) === 16, { what: '16 webhooks held' });

    await loseRedis();
    expect(await held()).toBe(16);
    await sleep(3000);
    // Another config flows meanwhile: the fleet delivers, only the paused config waits.
    await enqueue('rp-other', rx.url('/other'), 3);
    await waitFor(() => rx.received.filter((r) => r.path === '/other').length >= 3, { what: 'the other config delivered' });
    expect(rx.received.filter((r) => r.path !== '/other')).toHaveLength(0);
    expect(await held()).toBe(16);

    expect(((await (await f.post('/configs/rp-cfg/resume', {})).json()) as any).released).toBe(16);
    await waitFor(() => rx.received.filter((r) => r.path !== '/other').length >= 16, { timeoutMs: 60_000, what: '16 webhooks delivered' });
    await sleep(1000);
    const got = rx.received.filter((r) => r.path !== '/other').map((r) => String(r.headers['webhook-id']));
    expect(got.sort()).toEqual([...ids].sort());
  });

  it('a circuit opened by failures stays open across the loss (webhooks parked, not attempted), then closes through its probe', async () => {
    let down = true;
    const recovery = 10_000;
    const { rx, f, loseRedis, enqueue, view } = await start(() => ({ status: down ? 503 : 200 }), {
      'circuit_breaker.failure_threshold': 3,
      'circuit_breaker.failure_window': '60s',
      'circuit_breaker.recovery_timeout': recovery,
      'circuit_breaker.probe_interval': 500,
      'circuit_breaker.success_threshold': 1,
    });
    const endpoint = rx.url('/down');
    const hash = await endpointHash(endpoint);
    const ids = await enqueue('rc', endpoint, 3, 0, 20);
    const opened = await waitFor(
      async () => {
        const v = await view(hash);
        return v.circuit.state === 'OPEN' ? v : undefined;
      },
      { what: 'the circuit to open' },
    );
    const attempts = rx.received.length;
    expect(attempts).toBeGreaterThanOrEqual(3);

    await loseRedis();
    const after = await view(hash);
    expect(after.circuit).toMatchObject({ state: 'OPEN', open_until: opened.circuit.open_until, opened_count: 1 });
    // New webhooks and the restored retries are parked until the circuit's probe: nothing is sent.
    ids.push(...(await enqueue('rc', endpoint, 3, 3, 20)));
    await waitFor(async () => (await Promise.all(ids.slice(3).map((id) => f.hot.getStatus(id)))).every((s) => s?.held === 'circuit_open'), {
      what: 'new webhooks parked by the open circuit',
    });
    await sleep(Math.min(2000, Math.max(0, opened.circuit.open_until - Date.now() - 1000)));
    if (Date.now() < opened.circuit.open_until) expect(rx.received).toHaveLength(attempts);

    down = false;
    await waitFor(async () => (await Promise.all(ids.map((id) => f.hot.getStatus(id)))).every((s) => s?.state === 'delivered'), {
      timeoutMs: 90_000,
      what: 'all six delivered after the probe',
    });
    // Nothing went out before the circuit's recovery time.
    expect(rx.received.slice(attempts).every((r) => r.at >= opened.circuit.open_until)).toBe(true);
    expect((await view(hash)).circuit.state).toBe('CLOSED');
  });
});
