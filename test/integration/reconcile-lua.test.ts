import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useFlushedRedis } from '../helpers/flushed-redis';
import { SCRIPTS, type ScriptName } from '../../workers/redis/scripts';

// The recovery and listing Lua scripts against real Redis, each called by its header
// contract (KEYS, ARGV, returns). A db of its own (useFlushedRedis), flushed before each test.
let redis: Redis;
useFlushedRedis((r) => (redis = r));

const run = (name: ScriptName, keys: string[], args: (string | number)[]) => redis.eval(SCRIPTS[name].lua, SCRIPTS[name].numberOfKeys, ...keys, ...args);
const members = (k: string) => redis.zrange(k, 0, -1);

describe('indexStatus-3.lua', () => {
  const H = 'status:wh_B';
  const ALL = 'idx:webhooks:{c}';
  const EP = 'idx:webhooks:{c}:endpoint:e1';
  const P = 'idx:webhooks:{c}:state:';
  const index = (keys = [H, ALL, EP], prefix = P, floor = 'wh_A') => run('indexStatus', keys, ['wh_B', prefix, floor]);
  const store = (state: string) => redis.hset(H, 'data', JSON.stringify({ webhook_id: 'wh_B', state }), 'ts', '1');

  it('returns 0 and indexes nothing when no status is stored or it names no state', async () => {
    expect(await index()).toBe(0);
    await redis.hset(H, 'data', '{"webhook_id":"wh_B"}');
    expect(await index()).toBe(0);
    await redis.hset(H, 'data', 'not json');
    expect(await index()).toBe(0);
    expect(await redis.keys('idx:*')).toEqual([]);
  });

  it('adds the webhook to the config, endpoint and state indexes once; returns 1, then 0', async () => {
    await store('pending');
    expect(await index()).toBe(1);
    expect(await index()).toBe(0);
    for (const k of [ALL, EP, `${P}pending`]) expect(await members(k)).toEqual(['wh_B']);
    expect(await redis.hmget(H, 'ix', 'ixp')).toEqual([`${P}pending`, P]);
  });

  it('moves it between state indexes as the stored state changes, also for a writer that knows no config', async () => {
    await store('pending');
    await index();
    await store('retrying');
    expect(await index(['status:wh_B', '', ''], '')).toBe(1);
    expect(await members(`${P}pending`)).toEqual([]);
    expect(await members(`${P}retrying`)).toEqual(['wh_B']);
    expect(await members(ALL)).toEqual(['wh_B']);
  });

  it('without a stored prefix, a writer that knows no config indexes nothing', async () => {
    await store('retrying');
    expect(await index([H, '', ''], '')).toBe(0);
    expect(await redis.keys('idx:*')).toEqual([]);
  });

  it('trims members lexicographically below the floor from the indexes it writes', async () => {
    await redis.zadd(ALL, 0, 'wh_0old', 0, 'wh_Cnew');
    await store('pending');
    await index([H, ALL, EP], P, 'wh_A');
    expect(await members(ALL)).toEqual(['wh_B', 'wh_Cnew']);
  });
});

describe('restoreState-5.lua', () => {
  // The webhook's shard (here 'retries'), its data, its config's queue in the shard and the shard's configs.
  const K = ['status:wh_1', 'retries', 'retry_data:wh_1', 'retries:config:{c1}', 'retries:configs'];
  const restore = (ts: string, due: number | '' = 1000, data = 'D') => run('restoreState', K, ['{"s":1}', ts, 60_000, 'wh_1', due, data, 60_000, 'c1']);

  it('writes status, retry and data where nothing is stored; returns 1', async () => {
    expect(await restore('1750000000000000001')).toBe(1);
    expect(await redis.hgetall(K[0]!)).toEqual({ data: '{"s":1}', ts: '1750000000000000001', hs: '1750000000000000001' });
    expect(await redis.zscore('retries', 'wh_1')).toBe('1000');
    expect(await redis.zscore(K[3]!, 'wh_1')).toBe('1000');
    expect(await redis.zscore(K[4]!, 'c1')).toBe('1000');
    expect(await redis.get(K[2]!)).toBe('D');
    for (const k of [K[0]!, K[2]!]) expect(await redis.pttl(k)).toBeGreaterThan(59_000);
  });

  it('returns 0 and touches nothing when a status as new or newer is stored', async () => {
    await redis.hset(K[0]!, 'data', 'live', 'ts', '1750000000000000005');
    expect(await restore('1750000000000000005')).toBe(0);
    expect(await restore('1750000000000000004')).toBe(0);
    expect(await redis.hget(K[0]!, 'data')).toBe('live');
    expect(await redis.exists('retries', K[2]!)).toBe(0);
  });

  it('writes an older-than-nothing status but keeps a scheduled retry and its data', async () => {
    await redis.zadd('retries', 5000, 'wh_1');
    await redis.set(K[2]!, 'live');
    expect(await restore('1750000000000000001', 1000, 'replayed')).toBe(1);
    expect(await redis.zscore('retries', 'wh_1')).toBe('5000');
    expect(await redis.get(K[2]!)).toBe('live');
  });

  it('over a status the old history layout wrote (ts, no hs of its own), marks it as one (hs "-")', async () => {
    await redis.hset(K[0]!, 'data', 'old', 'ts', '1750000000000000001');
    expect(await restore('1750000000000000002')).toBe(1);
    expect(await redis.hmget(K[0]!, 'ts', 'hs')).toEqual(['1750000000000000002', '-']);
  });

  it("schedules nothing for an empty due time (a dead webhook's status)", async () => {
    expect(await restore('1750000000000000001', '')).toBe(1);
    expect(await redis.exists('retries')).toBe(0);
  });
});

describe('putDeadLetter-3.lua', () => {
  const ALL = 'idx:deadletters:{c}';
  const R = (r: string) => `idx:deadletters:{c}:reason:${r}`;
  const put = (at: number, reason: string, record = `rec@${at}`, floor = '0000000000000') =>
    run('putDeadLetter', ['deadletter:wh_1', ALL, R(reason)], [`${String(at).padStart(13, '0')}:wh_1`, record, at, 60_000, floor]);

  it('stores the record and indexes it by config and reason; returns 1', async () => {
    expect(await put(1_750_000_000_000, 'exhausted')).toBe(1);
    expect(await redis.hgetall('deadletter:wh_1')).toEqual({ data: 'rec@1750000000000', at: '1750000000000', member: '1750000000000:wh_1', rix: R('exhausted') });
    expect(await members(ALL)).toEqual(['1750000000000:wh_1']);
    expect(await members(R('exhausted'))).toEqual(['1750000000000:wh_1']);
    expect(await redis.pttl('deadletter:wh_1')).toBeGreaterThan(59_000);
  });

  it('ignores a dead letter as old or older (returns 0), moves to a later one', async () => {
    await put(2000, 'unrecoverable');
    expect(await put(2000, 'exhausted')).toBe(0);
    expect(await put(1000, 'exhausted')).toBe(0);
    expect(await put(3000, 'exhausted')).toBe(1);
    expect(await members(ALL)).toEqual(['0000000003000:wh_1']);
    expect(await members(R('unrecoverable'))).toEqual([]);
    expect(await members(R('exhausted'))).toEqual(['0000000003000:wh_1']);
    expect(await redis.hget('deadletter:wh_1', 'data')).toBe('rec@3000');
  });

  it('trims index members below the floor', async () => {
    await redis.zadd(ALL, 0, '0000000000001:wh_old');
    await put(5000, 'exhausted', 'r', '0000000000100');
    expect(await members(ALL)).toEqual(['0000000005000:wh_1']);
  });
});

describe('renewLock-1.lua and releaseLock-1.lua', () => {
  const L = 'howk:reconciler:lock';

  it('renew extends the TTL for the owner only (1), never for another or a free lock (0)', async () => {
    expect(await run('renewLock', [L], ['a', 60_000])).toBe(0);
    await redis.set(L, 'a', 'PX', 1000);
    expect(await run('renewLock', [L], ['b', 60_000])).toBe(0);
    expect(await redis.pttl(L)).toBeLessThanOrEqual(1000);
    expect(await run('renewLock', [L], ['a', 60_000])).toBe(1);
    expect(await redis.pttl(L)).toBeGreaterThan(59_000);
  });

  it('release deletes for the owner only', async () => {
    await redis.set(L, 'a');
    expect(await run('releaseLock', [L], ['b'])).toBe(0);
    expect(await redis.get(L)).toBe('a');
    expect(await run('releaseLock', [L], ['a'])).toBe(1);
    expect(await redis.exists(L)).toBe(0);
    expect(await run('releaseLock', [L], ['a'])).toBe(0);
  });
});
