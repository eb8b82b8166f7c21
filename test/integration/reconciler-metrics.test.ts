import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { createRedis } from '../../workers/redis/client';
import { dropTopics } from '../helpers/drop-topics';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { redisUrlOf, useRedisDb } from '../helpers/redis-db';

// howk-reconciler --watch as a process on real Kafka + Redis: on an empty Redis it rebuilds,
// and its metrics.port shows the rebuild.

const redisDb = useRedisDb();

describe('howk-reconciler metrics (a process)', () => {
  let proc: Proc | undefined;
  let topics: Record<string, string> = {};
  afterAll(async () => {
    if (proc) await stopProc(proc);
    await dropTopics(Object.values(topics));
  });

  it('serves GET /metrics on metrics.port with the rebuild it ran', async () => {
    const redis = createRedis(redisUrlOf(redisDb()));
    await redis.flushdb();
    await redis.quit();
    const runId = uniq('rec-metrics');
    topics = Object.fromEntries(Object.keys(loadConfig({ env: {} }).kafka.topics).map((k) => [k, `${runId}.${k}`]));
    const port = await freePort();
    const env: Record<string, string> = {
      HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
      HOWK_KAFKA_CONSUMER_GROUP: `${runId}-workers`,
      HOWK_KAFKA_PARTITIONS: '2',
      HOWK_REDIS_URL: redisUrlOf(redisDb()),
      HOWK_METRICS_PORT: String(port),
      HOWK_LOG_LEVEL: 'warn',
    };
    for (const [k, v] of Object.entries(topics)) env[`HOWK_KAFKA_TOPICS_${k.toUpperCase()}`] = v;
    proc = spawnRole('reconciler', env, ['--watch']);
    const text = await waitFor(
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`).catch(() => undefined);
        const body = res?.ok ? await res.text() : '';
        return /^howk_redis_rebuilds_total 1$/m.test(body) ? body : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, what: `the rebuild on howk-reconciler's metrics\n${proc.output()}` },
    );
    expect(text).toContain('# TYPE howk_redis_errors_total counter');
    expect(text).toContain('process_cpu_seconds_total');
  });
});
