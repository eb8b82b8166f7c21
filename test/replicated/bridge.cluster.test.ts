import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import { Hono } from 'hono';
import { newCounters } from '../../workers/bridge/counters';
import { dialectError } from '../../workers/bridge/kafka-routes';
import { redisRoutes } from '../../workers/bridge/redis-routes';
import { slotOf } from '../../workers/redis/slots';
import { redisCluster } from './redis-cluster';

// howk-bridge's Redis routes on a real Redis Cluster: a pipeline spanning slots (and nodes)
// is answered in order, as on one Redis; a MULTI spanning slots, which a cluster cannot run,
// is refused with a 400 naming the problem and runs nothing.
describe('howk-bridge /redis on a Redis Cluster', () => {
  let redis: Redis;
  const ns = `bridge-${process.pid}-${randomBytes(3).toString('hex')}`;
  // Two kv keys of two transformers, on two masters (picked once the slots are known).
  const a = `kv:t:{${ns}-a}:k`;
  let b = '';
  // The routes behind the bridge's error handler (workers/bridge/app.ts): errors in the dialect's shape, {error}.
  const app = () =>
    new Hono()
      .onError((e, c) => {
        const { status, error } = dialectError(e);
        return c.json({ error }, status);
      })
      .route('/', redisRoutes(redis, ['get', 'set', 'del', 'exists'], newCounters()));
  const post = (path: string, body: unknown) => app().request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  beforeAll(async () => {
    await redisCluster.start();
    redis = redisCluster.client();
    await redis.ping();
    const nodeOf = (key: string) => (redis as unknown as Cluster).slots[slotOf(key)]![0];
    for (let i = 0; nodeOf((b = `kv:t:{${ns}-b${i}}:k`)) === nodeOf(a); i++);
  }, 240_000);
  afterAll(async () => {
    await redis?.del(a).catch(() => 0);
    await redis?.del(b).catch(() => 0);
    await redis?.quit();
    await redisCluster.stop();
  }, 120_000);

  it('runs a pipeline whose keys span slots on two masters, replies in order', async () => {
    const res = await post('/pipeline', [
      ['set', a, '1', 'EX', 60],
      ['set', b, '2', 'EX', 60],
      ['get', b],
      ['get', a],
      ['exists', a],
    ]);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([{ result: 'OK' }, { result: 'OK' }, { result: '2' }, { result: '1' }, { result: 1 }]);
  });

  it('refuses a MULTI whose keys span slots (400, nothing run), and runs one within a slot', async () => {
    const res = await post('/multi-exec', [
      ['del', a],
      ['del', b],
    ]);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: expect.stringMatching(/MULTI on a Redis Cluster must keep its keys in one hash slot/) });
    expect(await redis.exists(a)).toBe(1);
    const ok = await post('/multi-exec', [
      ['get', a],
      ['del', a],
    ]);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual([{ result: '1' }, { result: 1 }]);
  });
});
