import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { releaseRedisDb, takeRedisDb } from '../helpers/redis-db';

// GET /stats/gauges on real Kafka + Redis: the open circuits and deliveries in flight the
// workers keep in Redis, and the consumer lag of the fast-lane group once no worker reads.

type Gauges = Record<'retry_queue' | 'in_flight' | 'slow_lane' | 'consumer_lag' | 'open_circuits', number | null>;
const gauges = async (f: TestFleet): Promise<Gauges> => (await (await fetch(`${f.baseUrl}/stats/gauges`)).json()) as Gauges;

describe('console gauges (real Kafka + Redis)', () => {
  let rx: Receiver;
  let dev: TestFleet | undefined;
  let api: TestFleet | undefined;
  let db: number;

  beforeAll(async () => {
    rx = await startReceiver((r) => {
      if (r.path.startsWith('/down')) return { status: 503 };
      if (r.path.startsWith('/slow')) return { status: 200, delayMs: 3000 };
      return { status: 200 };
    });
    db = await takeRedisDb();
    dev = await startTestFleet('kafka', { redisDb: db, overrides: { 'circuit_breaker.failure_threshold': 3 } });
  });
  afterAll(async () => {
    await dev?.stop();
    await api?.stop();
    await rx?.close();
    await releaseRedisDb(db);
  });

  it('counts the deliveries under way and the endpoint whose circuit opened', async () => {
    const f = dev!;
    expect(await gauges(f)).toMatchObject({ in_flight: 0, open_circuits: 0 });
    // The receiver holds the request for 3 s: a delivery under way.
    expect((await f.post('/webhooks/g-slow/enqueue', { endpoint: rx.url('/slow'), payload: {} })).status).toBe(202);
    await waitFor(async () => ((await gauges(f)).in_flight === 1 ? true : undefined), { what: 'a delivery in flight' });
    // One attempt each: three failures open the circuit (circuit_breaker.failure_threshold).
    for (let i = 0; i < 3; i++) expect((await f.post('/webhooks/g-down/enqueue', { endpoint: rx.url('/down'), payload: { i }, max_attempts: 1 })).status).toBe(202);
    const g = await waitFor(
      async () => {
        const x = await gauges(f);
        return x.open_circuits === 1 && x.in_flight === 0 ? x : undefined;
      },
      { what: 'one open circuit, nothing in flight' },
    );
    expect(g).toMatchObject({ consumer_lag: 0, slow_lane: 0 });
  });

  it('shows the webhooks enqueued while no worker reads as consumer lag (howk-api alone)', async () => {
    const config = dev!.config;
    await dev!.stop();
    dev = undefined;
    api = await startTestFleet('kafka', { config, redisDb: db, roles: { api: true, worker: false, scheduler: false } });
    for (let i = 0; i < 5; i++) expect((await api.post('/webhooks/g-lag/enqueue', { endpoint: rx.url('/ok'), payload: { i } })).status).toBe(202);
    const g = await waitFor(
      async () => {
        const x = await gauges(api!);
        return (x.consumer_lag ?? 0) >= 5 ? x : undefined;
      },
      { what: 'a lag of the five webhooks' },
    );
    // The circuit the workers opened is still open in Redis, as howk-api reads it.
    expect(g).toMatchObject({ open_circuits: 1, in_flight: 0, slow_lane: 0 });
  });
});
