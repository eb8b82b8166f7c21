import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { loadConfig } from '../../core/config/load';
import { topicSpecs } from '../../core/pipeline/topics';
import { KafkaLog } from '../../workers/kafka/log';
import { createRedis } from '../../workers/redis/client';
import type { Redis } from 'ioredis';
import { requireEnv, uniq } from '../helpers/env';
import { redisUrlOf, useRedisDb } from '../helpers/redis-db';
import { T0, deadLetter, hook, snapshot, stamp, tombstone } from '../helpers/reconcile-fixtures';
import { retryKeyOf, scheduledCount, scheduledIds } from '../helpers/retry-keys';

// howk-reconciler as a process on real Kafka + Redis (a db of its own): it rebuilds when the canary is
// missing, does nothing when it is present, and rebuilds anyway with --force.
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('howk-reconciler', () => {
  const prefix = uniq('rec-bin');
  const db = useRedisDb();
  let redis: Redis;
  let log: KafkaLog;
  const env: Record<string, string> = {
    HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
    HOWK_KAFKA_CONSUMER_GROUP: `${prefix}-workers`,
    HOWK_KAFKA_PARTITIONS: '2',
    HOWK_LOG_LEVEL: 'info',
  };
  const config = loadConfig({ env: {}, overrides: { 'kafka.partitions': 2 } });
  for (const t of Object.keys(config.kafka.topics)) env[`HOWK_KAFKA_TOPICS_${t.toUpperCase()}`] = `${prefix}.${t}`;
  const topic = (t: 'state' | 'deadletter') => `${prefix}.${t}`;

  const runBinary = (...args: string[]) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [join(root, 'bin/howk-reconciler.mjs'), ...args], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      child.on('exit', (code) => resolve({ code, out }));
    });

  beforeAll(async () => {
    env.HOWK_REDIS_URL = redisUrlOf(db());
    redis = createRedis(requireEnv('REDIS_URL'), { db: db() });
    await redis.flushdb();
    log = new KafkaLog({ brokers: env.HOWK_KAFKA_BROKERS!.split(','), clientId: 'rec-bin', produceTimeoutMs: 10_000, maxWaitMs: 20, maxBytesPerPartition: 1 << 20 });
    await log.admin.ensureTopics(topicSpecs(loadConfig({ env, overrides: {} })));
    const p = log.producer();
    const live = hook('wh_live', { attempt: 2 });
    const done = hook('wh_done', { attempt: 1 });
    const dead = hook('wh_dead', { attempt: 0 });
    await p.send([snapshot(live, stamp(T0, 1), T0 + 5000), snapshot(done, stamp(T0, 2)), tombstone('wh_done')].map((r) => ({ topic: topic('state'), ...r })));
    await p.send([{ topic: topic('deadletter'), key: 'wh_dead', value: deadLetter(dead, T0 + 10, 'unrecoverable') }]);
    await p.close();
  });

  afterAll(async () => {
    await log?.close();
    await redis?.quit();
  });

  it('rebuilds when the canary is missing, then exits 0', async () => {
    const { code, out } = await runBinary();
    expect(code, out).toBe(0);
    expect(out).toMatch(/"outcome":"rebuilt"/);
    expect(await redis.exists(keys.canary())).toBe(1);
    expect(await scheduledIds(redis)).toEqual(['wh_live']);
    expect(await redis.hget(keys.deadLetter('wh_dead'), 'data')).toContain('"reason_type":"unrecoverable"');
    expect(await redis.exists(keys.status('wh_done'))).toBe(0);
    expect(await redis.exists(keys.reconcilerLock())).toBe(0);
  });

  it('does nothing when the canary is present; --force rebuilds anyway', async () => {
    await redis.del(retryKeyOf('wh_live'));
    const present = await runBinary();
    expect(present.code, present.out).toBe(0);
    expect(present.out).toMatch(/"outcome":"present"/);
    expect(await scheduledCount(redis)).toBe(0);
    // The status is still there (LWW keeps it), so --force restores nothing of wh_live...
    const forced = await runBinary('--force');
    expect(forced.code, forced.out).toBe(0);
    expect(forced.out).toMatch(/forced rebuild done/);
    expect(await scheduledCount(redis)).toBe(0);
    // ...until its status is gone too: a rebuild fills in only what is missing.
    await redis.del(keys.status('wh_live'));
    expect((await runBinary('--force')).code).toBe(0);
    expect(await scheduledIds(redis)).toEqual(['wh_live']);
  });
});
