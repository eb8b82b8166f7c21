import { Kafka as UpstashKafka } from '@upstash/kafka';
import { Redis as UpstashRedis } from '@upstash/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { keys } from '../../core/domain/keys';
import { KafkaLog } from '../../workers/kafka/log';
import { uniq, waitFor } from '../helpers/env';
import { BRIDGE_PASSWORD, BRIDGE_TOKEN, bridgeAuth, collect, configOf, ensureTopics, fleetEnv, startBridge, useFleetRedisDb, type Bridge } from './helpers/stack';

// howk-bridge on the real Kafka and Redis, driven by the official Upstash clients: what the
// edge sends is what these clients send.
describe('howk-bridge', () => {
  const env = fleetEnv();
  useFleetRedisDb(env);
  const topics = configOf(env).kafka.topics;
  let bridge: Bridge;
  let down: Bridge;

  beforeAll(async () => {
    await ensureTopics(env);
    [bridge, down] = await Promise.all([
      startBridge(env),
      // Same settings, but no broker listens there: what the edge meets when Kafka is down.
      startBridge({ ...env, HOWK_KAFKA_BROKERS: '127.0.0.1:1' }, undefined, { HOWK_BRIDGE_PRODUCE_TIMEOUT: '1200ms' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([bridge?.stop(), down?.stop()]);
  });

  it('produces with @upstash/kafka: acks in order, offsets and partitions as Kafka assigned them', async () => {
    const kafka = new UpstashKafka({ url: `${bridge.url}/kafka`, username: 'howk', password: BRIDGE_PASSWORD });
    const c = await collect(env, [topics.pending]);
    try {
      const acks = await kafka.producer().produceMany([
        { topic: topics.pending, key: 'cfg-a', value: '{"n":1}' },
        { topic: topics.pending, key: 'cfg-a', value: '{"n":2}', headers: [{ key: 'h', value: 'v' }] },
        { topic: topics.slow, key: 'cfg-b', value: '{"n":3}' },
      ]);
      expect(acks.map((a) => a.topic)).toEqual([topics.pending, topics.pending, topics.slow]);
      expect(acks[1]!.partition).toBe(acks[0]!.partition);
      expect(acks[1]!.offset).toBe(acks[0]!.offset + 1);
      // howk-api's kafkajs producer places the same key on the same partition.
      const native = new KafkaLog({ brokers: env.HOWK_KAFKA_BROKERS!.split(','), clientId: 'edge-native', produceTimeoutMs: 5000, maxWaitMs: 20, maxBytesPerPartition: 1 << 20 });
      await native.producer().send([{ topic: topics.pending, key: 'cfg-a', value: '{"n":"native"}' }]);
      await native.close();
      const got = await waitFor(() => (c.of(topics.pending).length >= 3 ? c.of(topics.pending) : undefined), { what: 'records on the pending topic' });
      const byValue = new Map(got.map((r) => [r.value, r]));
      expect(byValue.get('{"n":1}')).toMatchObject({ key: 'cfg-a', partition: acks[0]!.partition, offset: String(acks[0]!.offset) });
      expect(byValue.get('{"n":2}')).toMatchObject({ partition: acks[1]!.partition, offset: String(acks[1]!.offset) });
      expect(byValue.get('{"n":"native"}')!.partition).toBe(acks[0]!.partition);
    } finally {
      await c.stop();
    }
  });

  it('refuses wrong credentials, topics outside its list, and malformed bodies; produces nothing then', async () => {
    const before = await bridge.stats();
    const post = (body: unknown, auth = bridgeAuth) =>
      fetch(`${bridge.url}/kafka/produce`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const wrong = await post({ topic: topics.pending, value: 'x' }, `Basic ${Buffer.from('howk:nope').toString('base64')}`);
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect((await fetch(`${bridge.url}/kafka/produce`, { method: 'POST', body: '{}' })).status).toBe(401);
    const other = await post({ topic: topics.results, value: 'x' });
    expect(other.status).toBe(403);
    expect(((await other.json()) as { error: string }).error).toMatch(/not open to the edge/);
    expect((await post({ topic: topics.pending })).status).toBe(400);
    expect((await post([])).status).toBe(400);
    const after = await bridge.stats();
    expect(after.produce_records).toBe(before.produce_records);
  });

  it('serves the Redis REST subset to @upstash/redis: commands, pipelines, transactions, base64 replies', async () => {
    const redis = new UpstashRedis({ url: `${bridge.url}/redis`, token: BRIDGE_TOKEN, enableTelemetry: false });
    const k = uniq('kv:edge');
    expect(await redis.set(k, 'héllo ✓ "quoted"', { ex: 60 })).toBe('OK');
    expect(await redis.get(k)).toBe('héllo ✓ "quoted"');
    expect(await redis.set(`${k}:obj`, { a: 1, b: [2] })).toBe('OK');
    expect(await redis.get(`${k}:obj`)).toEqual({ a: 1, b: [2] });
    const p = redis.pipeline();
    p.incrby(`${k}:n`, 5);
    p.ttl(k);
    p.get(`${k}:missing`);
    p.mget(k, `${k}:missing`);
    const [n, ttl, missing, both] = (await p.exec()) as [number, number, null, (string | null)[]];
    expect(n).toBe(5);
    expect(ttl).toBeGreaterThan(50);
    expect(missing).toBeNull();
    expect(both).toEqual(['héllo ✓ "quoted"', null]);
    const tx = redis.multi();
    tx.incr(`${k}:n`);
    tx.del(`${k}:n`);
    expect(await tx.exec()).toEqual([6, 1]);
    await expect(redis.flushdb()).rejects.toThrow(/not allowed/);
    await expect(redis.keys('*')).rejects.toThrow(/not allowed/);
    const noAuth = await fetch(`${bridge.url}/redis`, { method: 'POST', headers: { authorization: 'Bearer wrong' }, body: '["get","x"]' });
    expect(noAuth.status).toBe(401);
  });

  it('refuses the edge token on the fleet’s keys: only the edge’s commands on the edge’s keys run', async () => {
    const redis = new UpstashRedis({ url: `${bridge.url}/redis`, token: BRIDGE_TOKEN, enableTelemetry: false, automaticDeserialization: false });
    const direct = new Redis(env.HOWK_REDIS_URL!);
    try {
      await direct.hset(keys.status('wh_fleet'), 'data', '{"state":"delivered"}');
      await direct.zadd(keys.retries(), 5, 'wh_scheduled');
      const raw = (cmd: unknown[]) =>
        fetch(`${bridge.url}/redis`, { method: 'POST', headers: { authorization: `Bearer ${BRIDGE_TOKEN}` }, body: JSON.stringify(cmd) }).then(async (r) => ({
          status: r.status,
          error: ((await r.json()) as { error?: string }).error,
        }));
      for (const cmd of [
        ['set', keys.status('wh_fleet'), 'x'],
        ['hset', keys.status('wh_fleet'), 'data', 'x'],
        ['del', keys.status('wh_fleet')],
        ['del', 'kv:mine', keys.retries()],
        ['hset', keys.circuit('abc'), 'state', 'CLOSED'],
        ['zadd', keys.retries(), 1, 'wh_scheduled'],
        ['zadd', keys.retries(), 1, 'nx'],
        ['set', keys.retryData('wh_scheduled'), 'nx'],
        ['set', keys.idempotency('c', 'k'), 'x'],
      ]) {
        const r = await raw(cmd);
        expect({ cmd, status: r.status }).toEqual({ cmd, status: 403 });
        expect(r.error).toMatch(/not (open to the edge|allowed)/);
      }
      // One refused command refuses its whole pipeline: nothing of it ran.
      const p = redis.pipeline();
      p.set('kv:pipelined', '1');
      p.set(keys.status('wh_fleet'), 'x');
      await expect(p.exec()).rejects.toThrow(/not open to the edge/);
      expect(await direct.get('kv:pipelined')).toBeNull();
      expect(await direct.hget(keys.status('wh_fleet'), 'data')).toBe('{"state":"delivered"}');
      expect(await direct.zscore(keys.retries(), 'wh_scheduled')).toBe('5');
      // What the edge does use still works: status reads, the key table, capacity, parking with NX.
      expect(await redis.hget(keys.status('wh_fleet'), 'data')).toBe('{"state":"delivered"}');
      expect(await redis.hget(keys.apiKeys(), 'nobody')).toBeNull();
      await redis.hmget(keys.domainLimit('a.example'), 'limit', 'lat');
      expect(await redis.zadd(keys.retries(), { nx: true }, { score: 1, member: 'wh_scheduled' })).toBe(0);
      expect(await direct.zscore(keys.retries(), 'wh_scheduled')).toBe('5');
      // The Kafka password is no Redis credential.
      const cross = await fetch(`${bridge.url}/redis`, { method: 'POST', headers: { authorization: `Bearer ${BRIDGE_PASSWORD}` }, body: '["ping"]' });
      expect(cross.status).toBe(401);
    } finally {
      direct.disconnect();
    }
  });

  it('refuses any option its grant does not name: a parked webhook is never read back through SET … NX GET', async () => {
    const direct = new Redis(env.HOWK_REDIS_URL!);
    const stored = JSON.stringify({ id: 'wh_parked', headers: { authorization: 'Bearer customer-secret' } });
    try {
      await direct.set(keys.retryData('wh_parked'), stored);
      await direct.zadd(keys.retries(), 7, 'wh_parked');
      const raw = async (body: unknown, path = '') => {
        const r = await fetch(`${bridge.url}/redis${path}`, { method: 'POST', headers: { authorization: `Bearer ${BRIDGE_TOKEN}` }, body: JSON.stringify(body) });
        return { status: r.status, text: await r.text() };
      };
      for (const [cmd, option] of [
        [['set', keys.retryData('wh_parked'), 'x', 'NX', 'GET'], 'GET'],
        [['set', keys.retryData('wh_parked'), 'x', 'nx', 'get', 'px', 1000], 'GET'],
        [['set', keys.retryData('wh_parked'), 'x', 'NX', 'KEEPTTL'], 'KEEPTTL'],
        [['set', keys.retryData('wh_parked'), 'x', 'NX', 'XX'], 'XX'],
        [['zadd', keys.retries(), 'NX', 'CH', 1, 'wh_parked'], 'CH'],
        [['zadd', keys.retries(), 'NX', 'GT', 9, 'wh_parked'], 'GT'],
        [['zadd', keys.retries(), 'NX', 'INCR', 1, 'wh_parked'], 'INCR'],
        [['set', 'kv:mine', '1', 'GET'], 'GET'],
      ] as const) {
        for (const r of [await raw(cmd), await raw([['ping'], cmd], '/pipeline')]) {
          expect({ cmd, status: r.status }).toEqual({ cmd, status: 403 });
          const error = (JSON.parse(r.text) as { error: string }).error;
          expect(error).toContain(`option '${option}' of command '${String(cmd[0])}'`);
          expect(r.text).not.toContain('customer-secret');
        }
      }
      // The official client's own form of the attack, refused the same way.
      const upstash = new UpstashRedis({ url: `${bridge.url}/redis`, token: BRIDGE_TOKEN, enableTelemetry: false, automaticDeserialization: false });
      await expect(upstash.set(keys.retryData('wh_parked'), 'x', { nx: true, get: true })).rejects.toThrow(/option 'GET'/);
      // Nothing changed, and what the edge sends when it parks still runs.
      expect(await direct.get(keys.retryData('wh_parked'))).toBe(stored);
      expect(await direct.zscore(keys.retries(), 'wh_parked')).toBe('7');
      const p = upstash.pipeline();
      p.set(keys.retryData('wh_new'), '{}', { nx: true, px: 60_000 });
      p.zadd(keys.retries(), { nx: true }, { score: 3, member: 'wh_new' });
      expect(await p.exec()).toEqual(['OK', 1]);
    } finally {
      direct.disconnect();
    }
  });

  it('answers 429 with Retry-After past its rate limit, per route', async () => {
    const tight = await startBridge(env, undefined, { HOWK_BRIDGE_RATE_LIMIT: '0.01', HOWK_BRIDGE_RATE_BURST: '2' });
    try {
      const ping = () => fetch(`${tight.url}/redis`, { method: 'POST', headers: { authorization: `Bearer ${BRIDGE_TOKEN}` }, body: '["ping"]' });
      expect([(await ping()).status, (await ping()).status]).toEqual([200, 200]);
      const over = await ping();
      expect(over.status).toBe(429);
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      // The Kafka route has a bucket of its own.
      expect((await fetch(`${tight.url}/kafka/topics`, { headers: { authorization: bridgeAuth } })).status).toBe(200);
    } finally {
      await tight.stop();
    }
  });

  it('answers 503 with Retry-After within its produce timeout when Kafka is unreachable', async () => {
    const t0 = Date.now();
    const res = await fetch(`${down.url}/kafka/produce`, {
      method: 'POST',
      headers: { authorization: bridgeAuth, 'content-type': 'application/json' },
      body: JSON.stringify({ topic: topics.pending, value: '{}' }),
    });
    const took = Date.now() - t0;
    expect(res.status).toBe(503);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(took).toBeLessThan(1800);
    expect((await fetch(`${down.url}/ready`)).status).toBe(503);
    expect((await fetch(`${bridge.url}/ready`)).status).toBe(200);
  });
});
