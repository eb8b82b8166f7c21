import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useFlushedRedis } from '../helpers/flushed-redis';
import { BATCH_SCRIPTS, SCRIPTS, type ScriptName } from '../../workers/redis/scripts';

// Each Lua script against real Redis, called directly by its header contract (KEYS, ARGV,
// returns), independent of the adapter around it. A db of its own (useFlushedRedis), flushed before each test.
let redis: Redis;
useFlushedRedis((r) => (redis = r));

const run = (name: ScriptName, keys: string[], args: (string | number)[]) => redis.eval(SCRIPTS[name].lua, SCRIPTS[name].numberOfKeys, ...keys, ...args);

describe('writeStatuses.lua', () => {
  const P = 'idx:webhooks:{c}:state:';
  const ALL = 'idx:webhooks:{c}';
  const EP = 'idx:webhooks:{c}:endpoint:e1';
  const TARGETS = [ALL, EP, P];
  const status = (id: string, state: string, ts: string, extra: object = {}) =>
    JSON.stringify({ webhook_id: id, config_id: 'c', endpoint_hash: 'e1', state, updated_at_ns: ts, ...extra });
  // state: the state argument ('*' a patch); data: the JSON (default: a full status of `state`); known: false when the writer names no config (target 0).
  type W = { id: string; state: string; ts: string; attempt?: string; data?: string; known?: boolean };
  const write = (ws: W[], ttl = 60_000, limit = 20, floor = 'wh_0') =>
    redis.eval(
      BATCH_SCRIPTS.writeStatuses,
      0,
      'status:',
      'status_history:',
      ttl,
      limit,
      floor,
      // A webhook may be written more than once.
      1,
      // A block of one status each: its target (or none), 1 status with an attempt or 1 without, then the status.
      ...ws.flatMap((w) => [
        ...(w.known === false ? ['', '', ''] : TARGETS),
        ...(w.attempt ? [1, 0] : [0, 1]),
        w.data ?? status(w.id, w.state, w.ts),
        w.ts,
        w.state,
        w.id,
        ...(w.attempt ? [w.attempt] : []),
      ]),
    ) as Promise<number[]>;
  const stored = async (id: string) => JSON.parse((await redis.hget(`status:${id}`, 'data'))!) as Record<string, unknown>;
  const members = (k: string) => redis.zrange(k, 0, -1);

  const history = (id: string) => redis.hget(`status:${id}`, 'h');

  it('writes data, ts and the history into the status hash when nothing is stored, with the TTL; returns 1', async () => {
    expect(await write([{ id: 'wh_1', state: 'pending', ts: '1750000000000000001', attempt: '{"a":0}' }])).toEqual([1]);
    expect(await redis.hmget('status:wh_1', 'data', 'ts', 'h')).toEqual([status('wh_1', 'pending', '1750000000000000001'), '1750000000000000001', '{"a":0}']);
    expect(await redis.pttl('status:wh_1')).toBeGreaterThan(59_000);
    // No key of its own for the history.
    expect(await redis.exists('status_history:wh_1')).toBe(0);
  });

  it('keeps a newer-or-equal status (returns 0) but appends the attempt and refreshes the TTL', async () => {
    await write([{ id: 'wh_1', state: 'delivered', ts: '1750000000000000002', attempt: '{"a":0}' }], 1_000);
    expect(await write([{ id: 'wh_1', state: 'pending', ts: '1750000000000000001', attempt: '{"a":1}' }])).toEqual([0]);
    expect(await write([{ id: 'wh_1', state: 'retrying', ts: '1750000000000000002' }])).toEqual([0]);
    expect(await stored('wh_1')).toMatchObject({ state: 'delivered' });
    expect(await history('wh_1')).toBe('{"a":0}\n{"a":1}');
    expect(await redis.pttl('status:wh_1')).toBeGreaterThan(59_000);
    // The stored status decides the index: the stale writes moved nothing.
    expect(await members(`${P}delivered`)).toEqual(['wh_1']);
    expect(await redis.keys(`${P}pending`)).toEqual([]);
    expect(await redis.keys(`${P}retrying`)).toEqual([]);
  });

  it('a stale write indexes a stored status that was never indexed, by its stored state', async () => {
    await redis.hset('status:wh_1', 'data', status('wh_1', 'retrying', '1750000000000000009'), 'ts', '1750000000000000009');
    expect(await write([{ id: 'wh_1', state: 'pending', ts: '1750000000000000001' }])).toEqual([0]);
    for (const k of [ALL, EP, `${P}retrying`]) expect(await members(k)).toEqual(['wh_1']);
    expect(await redis.keys(`${P}pending`)).toEqual([]);
    expect(await redis.hmget('status:wh_1', 'ix', 'ixp')).toEqual([`${P}retrying`, P]);
  });

  it('a status the old layout wrote (history in a list): the attempt goes to the hash, and the list lives as long as the status from then on', async () => {
    // What a worker not yet upgraded leaves: data and ts, its attempt pushed to the list.
    await redis.hset('status:wh_1', 'data', status('wh_1', 'retrying', '1750000000000000001'), 'ts', '1750000000000000001');
    await redis.rpush('status_history:wh_1', '{"a":0}');
    await redis.pexpire('status_history:wh_1', 1_000);
    expect(await write([{ id: 'wh_1', state: 'retrying', ts: '1750000000000000002', attempt: '{"a":1}' }])).toEqual([1]);
    expect(await redis.lrange('status_history:wh_1', 0, -1)).toEqual(['{"a":0}']);
    expect(await history('wh_1')).toBe('{"a":1}');
    expect(await redis.pttl('status_history:wh_1')).toBeGreaterThan(59_000);
    // Every later write keeps refreshing it, with or without an attempt, stale or not.
    for (const w of [
      { id: 'wh_1', state: 'delivered', ts: '1750000000000000003' },
      { id: 'wh_1', state: 'retrying', ts: '1750000000000000002', attempt: '{"a":2}' },
    ]) {
      await redis.pexpire('status_history:wh_1', 1_000);
      await write([w]);
      expect(await redis.pttl('status_history:wh_1')).toBeGreaterThan(59_000);
    }
    expect(await history('wh_1')).toBe('{"a":1}\n{"a":2}');
  });

  it('a status an old worker wrote after this layout did is treated as the old layout from then on', async () => {
    await write([{ id: 'wh_1', state: 'pending', ts: '1750000000000000001' }]);
    await redis.hset('status:wh_1', 'data', status('wh_1', 'retrying', '1750000000000000002'), 'ts', '1750000000000000002');
    await redis.rpush('status_history:wh_1', '{"a":0}');
    await redis.pexpire('status_history:wh_1', 1_000);
    await write([{ id: 'wh_1', state: 'delivered', ts: '1750000000000000003', attempt: '{"a":1}' }]);
    expect(await redis.pttl('status_history:wh_1')).toBeGreaterThan(59_000);
  });

  it('compares stamps as decimal text: below double precision, and by length first', async () => {
    const one = async (state: string, ts: string) => (await write([{ id: 'wh_1', state, ts }]))[0];
    await one('pending', '1750000000000000001');
    expect(await one('retrying', '1750000000000000002')).toBe(1);
    expect(await one('pending', '1750000000000000001')).toBe(0);
    await redis.hset('status:wh_1', 'ts', '999');
    expect(await one('delivered', '1000')).toBe(1);
    expect(await one('pending', '999')).toBe(0);
    // Heads (all but the last 15 digits) decide before tails; equal heads, the tails.
    await redis.hset('status:wh_1', 'ts', '1759999999999999999');
    expect(await one('pending', '1750999999999999999')).toBe(0);
    expect(await one('delivered', '1760000000000000000')).toBe(1);
    expect(await one('pending', '1760000000000000000')).toBe(0);
    expect(await one('retrying', '1760000000000000010')).toBe(1);
  });

  it('writes over a hash that has no ts', async () => {
    await redis.hset('status:wh_1', 'data', '{"legacy":true}');
    expect(await write([{ id: 'wh_1', state: 'pending', ts: '1750000000000000001' }])).toEqual([1]);
  });

  it('appends nothing for an empty attempt and keeps the history to the limit, oldest dropped', async () => {
    await write([{ id: 'wh_1', state: 'pending', ts: '1750000000000000001' }]);
    expect(await history('wh_1')).toBeNull();
    for (let i = 0; i < 8; i++) await write([{ id: 'wh_1', state: 'retrying', ts: `175000000000000010${i}`, attempt: `{"a":${i}}` }], 60_000, 5);
    expect(await history('wh_1')).toBe([3, 4, 5, 6, 7].map((i) => `{"a":${i}}`).join('\n'));
    // Several attempts in one call, stale ones too, each trimmed to the limit as it lands.
    const more = [8, 9, 10].map((i) => ({ id: 'wh_1', state: 'retrying', ts: `175000000000000009${i % 10}`, attempt: `{"a":${i}}` }));
    expect(await write(more, 60_000, 5)).toEqual([0, 0, 0]);
    expect(await history('wh_1')).toBe([6, 7, 8, 9, 10].map((i) => `{"a":${i}}`).join('\n'));
  });

  it('stores each status with its history and indexes it, in request order', async () => {
    expect(
      await write([
        { id: 'wh_1', state: 'pending', ts: '1750000000000000001' },
        { id: 'wh_2', state: 'pending', ts: '1750000000000000001' },
        { id: 'wh_1', state: 'delivered', ts: '1750000000000000002', attempt: '{"a":1}' },
        { id: 'wh_2', state: 'retrying', ts: '1750000000000000000', attempt: '{"a":1}' },
      ]),
    ).toEqual([1, 1, 1, 0]);
    expect(await stored('wh_1')).toMatchObject({ state: 'delivered' });
    // The stale write of wh_2 keeps its status (and index entry) but still appends its attempt.
    expect(await stored('wh_2')).toMatchObject({ state: 'pending' });
    expect(await history('wh_2')).toBe('{"a":1}');
    expect(await members(`${P}delivered`)).toEqual(['wh_1']);
    expect(await members(`${P}pending`)).toEqual(['wh_2']);
    expect(await members(ALL)).toEqual(['wh_1', 'wh_2']);
    expect(await members(EP)).toEqual(['wh_1', 'wh_2']);
  });

  it('reads blocks of several statuses: five arguments each with an attempt, then four each without', async () => {
    const E2 = 'idx:webhooks:{c}:endpoint:e2';
    const reply = await redis.eval(
      BATCH_SCRIPTS.writeStatuses,
      0,
      'status:',
      'status_history:',
      60_000,
      20,
      'wh_0',
      // wh_1 is written twice.
      1,
      // Endpoint e2: two statuses without attempts.
      ...[ALL, E2, P, 0, 2, status('wh_1', 'pending', '1750000000000000001'), '1750000000000000001', 'pending', 'wh_1'],
      ...[status('wh_2', 'pending', '1750000000000000001'), '1750000000000000001', 'pending', 'wh_2'],
      // Endpoint e1: one with an attempt, one without.
      ...[...TARGETS, 1, 1, status('wh_3', 'delivered', '1750000000000000002'), '1750000000000000002', 'delivered', 'wh_3', '{"a":3}'],
      ...[status('wh_4', 'pending', '1750000000000000001'), '1750000000000000001', 'pending', 'wh_4'],
      // No target: a stale write of wh_1 that appends its attempt.
      ...['', '', '', 1, 0, status('wh_1', 'retrying', '1750000000000000000'), '1750000000000000000', 'retrying', 'wh_1', '{"a":1}'],
    );
    expect(reply).toEqual([1, 1, 1, 1, 0]);
    expect(await stored('wh_2')).toMatchObject({ state: 'pending' });
    expect(await redis.hmget('status:wh_2', 'ts', 'h')).toEqual(['1750000000000000001', null]);
    expect(await history('wh_3')).toBe('{"a":3}');
    expect(await history('wh_1')).toBe('{"a":1}');
    expect(await members(`${P}pending`)).toEqual(['wh_1', 'wh_2', 'wh_4']);
    expect(await members(`${P}delivered`)).toEqual(['wh_3']);
    expect(await members(E2)).toEqual(['wh_1', 'wh_2']);
    expect(await members(EP)).toEqual(['wh_3', 'wh_4']);
    for (const id of ['wh_1', 'wh_2', 'wh_3', 'wh_4']) expect(await redis.pttl(`status:${id}`)).toBeGreaterThan(59_000);
  });

  it('a webhook that changes state several times in one call, or leaves and comes back, is in the last state index only', async () => {
    await write([{ id: 'wh_1', state: 'pending', ts: '1750000000000000001' }]);
    await write([
      { id: 'wh_1', state: 'retrying', ts: '1750000000000000002' },
      { id: 'wh_1', state: 'pending', ts: '1750000000000000003' },
      { id: 'wh_2', state: 'pending', ts: '1750000000000000001' },
      { id: 'wh_2', state: 'retrying', ts: '1750000000000000002' },
      { id: 'wh_2', state: 'delivered', ts: '1750000000000000003' },
    ]);
    expect(await members(`${P}pending`)).toEqual(['wh_1']);
    expect(await redis.keys(`${P}retrying`)).toEqual([]);
    expect(await members(`${P}delivered`)).toEqual(['wh_2']);
    expect(await redis.hget('status:wh_1', 'ix')).toBe(`${P}pending`);
  });

  it('merges a patch that names no config into the stored status and moves it by the stored prefix', async () => {
    await write([{ id: 'wh_3', state: 'pending', ts: '1750000000000000001', attempt: '{"a":1}' }]);
    const patch = JSON.stringify({ webhook_id: 'wh_3', state: 'retrying', held: 'circuit_open', updated_at_ns: '1750000000000000002' });
    expect(await write([{ id: 'wh_3', state: '*', data: patch, ts: '1750000000000000002', known: false }])).toEqual([1]);
    expect(await stored('wh_3')).toMatchObject({ state: 'retrying', held: 'circuit_open', config_id: 'c', endpoint_hash: 'e1', updated_at_ns: '1750000000000000002' });
    expect(await members(`${P}retrying`)).toEqual(['wh_3']);
    expect(await members(`${P}pending`)).toEqual([]);
    // A patch without a state keeps the stored one (and its index entry); the history stays.
    const held = JSON.stringify({ webhook_id: 'wh_3', held: 'slow_lane', updated_at_ns: '1750000000000000003' });
    expect(await write([{ id: 'wh_3', state: '*', data: held, ts: '1750000000000000003', known: false }])).toEqual([1]);
    expect(await stored('wh_3')).toMatchObject({ state: 'retrying', held: 'slow_lane' });
    expect(await members(`${P}retrying`)).toEqual(['wh_3']);
    expect(await history('wh_3')).toBe('{"a":1}');
  });

  it('a patch with nothing stored (Redis lost) is stored as given and indexed nowhere, until a full write names its config', async () => {
    const patch = JSON.stringify({ webhook_id: 'wh_4', state: 'retrying', held: 'rate_limited', updated_at_ns: '1750000000000000002' });
    expect(await write([{ id: 'wh_4', state: '*', data: patch, ts: '1750000000000000002', known: false }])).toEqual([1]);
    expect(await redis.hget('status:wh_4', 'data')).toBe(patch);
    expect(await redis.keys('idx:*')).toEqual([]);
    expect(await write([{ id: 'wh_4', state: 'delivered', ts: '1750000000000000003' }])).toEqual([1]);
    for (const k of [ALL, EP, `${P}delivered`]) expect(await members(k)).toEqual(['wh_4']);
  });

  it('a full write naming no state is stored but not indexed', async () => {
    const data = JSON.stringify({ webhook_id: 'wh_5', config_id: 'c', updated_at_ns: '1750000000000000001' });
    expect(await write([{ id: 'wh_5', state: '', data, ts: '1750000000000000001' }])).toEqual([1]);
    expect(await redis.hget('status:wh_5', 'data')).toBe(data);
    expect(await redis.keys('idx:*')).toEqual([]);
  });

  it('trims members below the floor from the indexes it adds to, and indexes more members per key than one command takes', async () => {
    await redis.zadd(ALL, 0, 'wh_0old', 0, 'wh_Cnew');
    const ids = Array.from({ length: 1200 }, (_, i) => `wh_B${String(i).padStart(4, '0')}`);
    await write(
      ids.map((id) => ({ id, state: 'pending', ts: '1750000000000000001' })),
      60_000,
      20,
      'wh_A',
    );
    expect(await redis.zcard(`${P}pending`)).toBe(1200);
    expect(await redis.zcard(EP)).toBe(1200);
    const all = await members(ALL);
    expect(all).toHaveLength(1201);
    expect(all).not.toContain('wh_0old');
    await write(ids.map((id) => ({ id, state: 'delivered', ts: '1750000000000000002' })));
    expect(await redis.exists(`${P}pending`)).toBe(0);
    expect(await redis.zcard(`${P}delivered`)).toBe(1200);
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
