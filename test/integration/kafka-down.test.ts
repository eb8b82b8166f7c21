import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../core/ports/logger';
import { KafkaLog } from '../../workers/kafka/log';
import { fleetMetrics, startFleet, type Fleet } from '../../workers/node/fleet';
import { createHttpSender } from '../../workers/node/sender';
import { createRedis } from '../../workers/redis/client';
import { RedisHotState } from '../../workers/redis/hot-state';
import { requireEnv } from '../helpers/env';
import { testConfig } from '../helpers/fleet';
import { useRedisDb } from '../helpers/redis-db';

// howk-api pointed at a broker address where nothing listens: the real kafkajs adapter
// must give up within produce_timeout and answer 503 + Retry-After, never 202.
describe('enqueue while Kafka is unreachable', () => {
  const db = useRedisDb();
  let fleet: Fleet;
  let hot: RedisHotState;
  beforeAll(async () => {
    const config = testConfig('memory', { 'kafka.brokers': ['127.0.0.1:1'], 'kafka.produce_timeout': 1500 });
    hot = new RedisHotState(createRedis(requireEnv('REDIS_URL'), { db: db() }), { status_ttl: 60_000, stats_ttl: 60_000, retry_data_ttl: 60_000 });
    const metrics = fleetMetrics(config, { api: true });
    const logStore = new KafkaLog({
      brokers: config.kafka.brokers,
      clientId: 'down',
      produceTimeoutMs: 1500,
      maxWaitMs: 20,
      maxBytesPerPartition: 1 << 20,
      onError: metrics.pipeline.kafkaError,
    });
    fleet = await startFleet({
      metrics,
      config,
      logStore,
      hot,
      sender: createHttpSender({ connectionsPerOrigin: 1, snippetBytes: 10 }),
      log: silentLogger,
      roles: { api: true, worker: false, scheduler: false },
    });
  });
  afterAll(async () => {
    await fleet?.stop();
    await hot?.close();
  });

  it('answers 503 with Retry-After within the produce timeout, and releases the idempotency key', async () => {
    const body = JSON.stringify({ endpoint: 'http://127.0.0.1:9/x', payload: { a: 1 }, idempotency_key: 'k-down' });
    for (let i = 0; i < 2; i++) {
      const t0 = Date.now();
      const res = await fetch(`${fleet.baseUrl}/webhooks/down/enqueue`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(503);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await res.json()) as any).error.code).toBe('unavailable');
      expect(Date.now() - t0).toBeLessThan(4000);
    }
    // The failed attempts left no claim behind: nothing points at a webhook that does not exist.
    expect(await hot.claimIdempotency([{ configId: 'down', key: 'k-down', webhookId: 'wh_probe' }], 1000)).toEqual(['wh_probe']);
    // Both failed produces are counted, and both requests as rejected for want of Kafka.
    const text = (await fleet.metrics.exposition()).body;
    expect(text).toContain('howk_kafka_errors_total{op="produce"} 2');
    expect(text).toContain('howk_enqueue_requests_total{outcome="rejected",reason="unavailable"} 2');
  });

  it('reports the broker as down on /ready and /health/dependencies, while /health stays up', async () => {
    expect((await fetch(`${fleet.baseUrl}/health`)).status).toBe(200);
    expect((await fetch(`${fleet.baseUrl}/ready`)).status).toBe(503);
    const deps = (await (await fetch(`${fleet.baseUrl}/health/dependencies`)).json()) as any;
    expect(deps.dependencies.log.ok).toBe(false);
    expect(deps.dependencies.hot_state.ok).toBe(true);
  });
});
