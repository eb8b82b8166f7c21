import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRedis } from '../../workers/redis/client';
import { useRedisDb } from '../helpers/redis-db';
import { BATCH_SCRIPTS, SCRIPTS, type ScriptName } from '../../workers/redis/scripts';

// Each Lua script against real Redis, called directly by its header contract (KEYS, ARGV,
// returns), independent of the adapter around it. A db of its own (useRedisDb), flushed before each test.
const url = process.env.REDIS_URL;
if (!url) throw new Error('REDIS_URL is not set: the Redis Lua tests need a real Redis (scripts/infra/redis.sh start prints one)');

const db = useRedisDb();
let redis: Redis;
beforeAll(() => {
  redis = createRedis(url, { db: db() });
});
afterAll(async () => {
  await redis.quit();
});
beforeEach(async () => {
  await redis.flushdb();
});

const run = (name: ScriptName, keys: string[], args: (string | number)[]) => redis.eval(SCRIPTS[name].lua, SCRIPTS[name].numberOfKeys, ...keys, ...args);

describe('setStatus-2.lua', () => {
  const K = ['status:wh_1', 'status_history:wh_1'];
  const set = (data: string, ts: string, attempt = '', ttl = 60_000, limit = 20) => run('setStatus', K, [data, ts, ttl, attempt, limit]);

  it('writes data and ts when nothing is stored, with the TTL on both keys; returns 1', async () => {
    expect(await set('{"v":1}', '1750000000000000001', '{"a":0}')).toBe(1);
    expect(await redis.hgetall(K[0]!)).toEqual({ data: '{"v":1}', ts: '1750000000000000001' });
    expect(await redis.lrange(K[1]!, 0, -1)).toEqual(['{"a":0}']);
    for (const k of K) expect(await redis.pttl(k)).toBeGreaterThan(59_000);
  });

  it('keeps a newer-or-equal status (returns 0) but appends the attempt and refreshes the TTLs', async () => {
    await set('{"v":2}', '1750000000000000002', '{"a":0}', 1_000);
    expect(await set('{"v":1}', '1750000000000000001', '{"a":1}', 60_000)).toBe(0);
    expect(await set('{"v":3}', '1750000000000000002', '', 60_000)).toBe(0);
    expect(await redis.hget(K[0]!, 'data')).toBe('{"v":2}');
    expect(await redis.lrange(K[1]!, 0, -1)).toEqual(['{"a":0}', '{"a":1}']);
    for (const k of K) expect(await redis.pttl(k)).toBeGreaterThan(59_000);
  });

  it('compares stamps as decimal text: below double precision, and by length first', async () => {
    await set('{"v":1}', '1750000000000000001');
    expect(await set('{"v":2}', '1750000000000000002')).toBe(1);
    expect(await set('{"v":x}', '1750000000000000001')).toBe(0);
    await redis.hset(K[0]!, 'ts', '999');
    expect(await set('{"v":3}', '1000')).toBe(1);
    expect(await set('{"v":x}', '999')).toBe(0);
  });

  it('writes over a hash that has no ts', async () => {
    await redis.hset(K[0]!, 'data', '{"legacy":true}');
    expect(await set('{"v":1}', '1750000000000000001')).toBe(1);
  });

  it('appends nothing for an empty attempt and keeps the history to ARGV[5] entries, oldest dropped', async () => {
    await set('{}', '1750000000000000001');
    expect(await redis.exists(K[1]!)).toBe(0);
    for (let i = 0; i < 8; i++) await set('{}', `175000000000000010${i}`, `{"a":${i}}`, 60_000, 5);
    expect(await redis.lrange(K[1]!, 0, -1)).toEqual([3, 4, 5, 6, 7].map((i) => `{"a":${i}}`));
  });
});

describe('writeStatuses.lua', () => {
  const P = 'idx:webhooks:{c}:state:';
  const status = (id: string, state: string, ts: string) => JSON.stringify({ webhook_id: id, config_id: 'c', endpoint_hash: 'e1', state, updated_at_ns: ts });
  type W = { id: string; state: string; ts: string; attempt?: string; patch?: '1' | '0'; known?: boolean };
  const write = (ws: W[], ttl = 60_000, limit = 20, floor = 'wh_0') =>
    redis.eval(
      BATCH_SCRIPTS.writeStatuses,
      ws.length * 4,
      ...ws.flatMap((w) => [`status:${w.id}`, `status_history:${w.id}`, w.known === false ? '' : 'idx:webhooks:{c}', w.known === false ? '' : 'idx:webhooks:{c}:endpoint:e1']),
      ttl,
      limit,
      floor,
      ...ws.flatMap((w) => [status(w.id, w.state, w.ts), w.ts, w.attempt ?? '', w.patch ?? '0', w.id, w.known === false ? '' : P]),
    ) as Promise<number[]>;

  it('stores each status with its history and indexes it, as setStatus then indexStatus would, in request order', async () => {
    expect(
      await write([
        { id: 'wh_1', state: 'pending', ts: '1750000000000000001' },
        { id: 'wh_2', state: 'pending', ts: '1750000000000000001' },
        { id: 'wh_1', state: 'delivered', ts: '1750000000000000002', attempt: '{"a":1}' },
        { id: 'wh_2', state: 'retrying', ts: '1750000000000000000', attempt: '{"a":1}' },
      ]),
    ).toEqual([1, 1, 1, 0]);
    expect(JSON.parse((await redis.hget('status:wh_1', 'data'))!)).toMatchObject({ state: 'delivered' });
    // The stale write of wh_2 keeps its status (and index entry) but still appends its attempt.
    expect(JSON.parse((await redis.hget('status:wh_2', 'data'))!)).toMatchObject({ state: 'pending' });
    expect(await redis.lrange('status_history:wh_2', 0, -1)).toEqual(['{"a":1}']);
    expect(await redis.zrange(`${P}delivered`, 0, -1)).toEqual(['wh_1']);
    expect(await redis.zrange(`${P}pending`, 0, -1)).toEqual(['wh_2']);
    expect(await redis.zrange('idx:webhooks:{c}', 0, -1)).toEqual(['wh_1', 'wh_2']);
    expect(await redis.zrange('idx:webhooks:{c}:endpoint:e1', 0, -1)).toEqual(['wh_1', 'wh_2']);
    for (const k of ['status:wh_1', 'status_history:wh_1']) expect(await redis.pttl(k)).toBeGreaterThan(59_000);
  });

  it('merges a patch that names no config into the stored status and moves it by the stored prefix', async () => {
    await write([{ id: 'wh_3', state: 'pending', ts: '1750000000000000001' }]);
    expect(await write([{ id: 'wh_3', state: 'retrying', ts: '1750000000000000002', patch: '1', known: false }])).toEqual([1]);
    expect(JSON.parse((await redis.hget('status:wh_3', 'data'))!)).toMatchObject({ state: 'retrying', config_id: 'c' });
    expect(await redis.zrange(`${P}retrying`, 0, -1)).toEqual(['wh_3']);
    expect(await redis.zrange(`${P}pending`, 0, -1)).toEqual([]);
  });
});

describe('claimRetries-1.lua', () => {
  const now = 1_750_000_000_000;
  const lease = now + 30_000;
  const L = String(lease);
  const schedule = async (id: string, due: number, data: string | null = `d:${id}`) => {
    await redis.zadd('retries', due, id);
    if (data !== null) await redis.set(`retry_data:${id}`, data, 'PX', 60_000);
  };
  const claim = (limit: number, leaseDue = lease) => run('claimRetries', ['retries'], [now, limit, leaseDue, 'retry_data:']);

  it('returns id, data, leaseDueAt triples of due entries in due order, up to the limit, re-scored to the lease', async () => {
    await schedule('c', now);
    await schedule('a', now - 20);
    await schedule('b', now - 10);
    await schedule('later', now + 1);
    expect(await claim(2)).toEqual(['a', 'd:a', L, 'b', 'd:b', L]);
    expect(await redis.zrange('retries', 0, -1, 'WITHSCORES')).toEqual(['c', String(now), 'later', String(now + 1), 'a', String(lease), 'b', String(lease)]);
    expect(await redis.pttl('retry_data:a')).toBeGreaterThan(59_000);
    expect(await claim(10)).toEqual(['c', 'd:c', L]);
    expect(await claim(10)).toEqual([]);
    expect(await claim(0)).toEqual([]);
  });

  it('drops entries whose data is gone and fills the limit from the next ones', async () => {
    await schedule('gone1', now - 30, null);
    await schedule('gone2', now - 20, null);
    await schedule('ok1', now - 10);
    await schedule('ok2', now - 5);
    expect(await claim(2)).toEqual(['ok1', 'd:ok1', L, 'ok2', 'd:ok2', L]);
    expect(await redis.zrange('retries', 0, -1)).toEqual(['ok1', 'ok2']);
  });

  it('makes a single pass when the lease does not leave the due range', async () => {
    await schedule('gone', now - 30, null);
    await schedule('a', now - 20);
    await schedule('b', now - 10);
    expect(await claim(3, now)).toEqual(['a', 'd:a', String(now), 'b', 'd:b', String(now)]);
  });
});

describe('ackRetries-1.lua', () => {
  it('removes entry and data only where the score is the given lease; returns how many', async () => {
    await redis.zadd('retries', 100, 'a', 200, 'b');
    await redis.mset('retry_data:a', 'A', 'retry_data:b', 'B');
    expect(await run('ackRetries', ['retries'], ['retry_data:', 'a', 100, 'b', 199, 'none', 100])).toBe(1);
    expect(await redis.zrange('retries', 0, -1)).toEqual(['b']);
    expect(await redis.mget('retry_data:a', 'retry_data:b')).toEqual([null, 'B']);
    expect(await run('ackRetries', ['retries'], ['retry_data:'])).toBe(0);
  });

  it('matches large ms scores exactly', async () => {
    await redis.zadd('retries', 1_750_000_030_123, 'a');
    await redis.set('retry_data:a', 'A');
    expect(await run('ackRetries', ['retries'], ['retry_data:', 'a', 1_750_000_030_122])).toBe(0);
    expect(await run('ackRetries', ['retries'], ['retry_data:', 'a', 1_750_000_030_123])).toBe(1);
  });
});

describe('releaseIdempotency-1.lua', () => {
  it('deletes the key only when it holds the given id; returns 1 or 0', async () => {
    await redis.set('idempotency:cfg:k', 'wh_1');
    expect(await run('releaseIdempotency', ['idempotency:cfg:k'], ['wh_2'])).toBe(0);
    expect(await redis.get('idempotency:cfg:k')).toBe('wh_1');
    expect(await run('releaseIdempotency', ['idempotency:cfg:k'], ['wh_1'])).toBe(1);
    expect(await redis.exists('idempotency:cfg:k')).toBe(0);
    expect(await run('releaseIdempotency', ['idempotency:cfg:k'], ['wh_1'])).toBe(0);
  });
});
