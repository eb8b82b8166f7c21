import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { createRedis } from '../../workers/redis/client';
import { RedisGuards } from '../../workers/redis/guards';
import { argsOf } from '../helpers/resp-args';
import { batchScript, callScript } from '../../workers/redis/script-call';
import { requireEnv } from '../helpers/env';
import { useFlushedRedis } from '../helpers/flushed-redis';
import { EP, completion, params, req } from '../contract/guards.fixtures';

// The guards' hand-encoded script calls (workers/redis/script-call.ts) against real Redis:
// the arguments arrive as sent, a flushed script cache (as after a restart) is loaded again,
// error replies and a reconnect behave as with ioredis's own script commands. A db of its own
// (useFlushedRedis), flushed before each test.
const url = requireEnv('REDIS_URL');

let redis: Redis;
let admin: Redis;
const db = useFlushedRedis((r) => (admin = r));
beforeAll(() => {
  redis = createRedis(url, { db: db() });
});
afterAll(async () => {
  await redis.quit();
});

// A script text of this file's own (its SHA is no other test's).
const ECHO = batchScript(`-- script-call test ${process.pid}\nreturn ARGV`);
const VALUES: (string | number)[] = ['wh_1', '', 'é€😀 \r\n$3\r\n*x', 0, -12, 42.5, Date.now(), 'x'.repeat(5000)];
const echo = async (r: Redis = redis) => ((await callScript(r, ECHO, argsOf(VALUES))) as unknown[]).map(String);

describe('hand-encoded script calls', () => {
  it('deliver every argument as sent (UTF-8, empty, numbers as their text)', async () => {
    expect(await echo()).toEqual(VALUES.map(String));
  });

  it('load the script again after the script cache is flushed (as after a Redis restart)', async () => {
    await echo();
    await admin.script('FLUSH');
    expect(await admin.script('EXISTS', ECHO.sha)).toEqual([0]);
    expect(await echo()).toEqual(VALUES.map(String));
    expect(await admin.script('EXISTS', ECHO.sha)).toEqual([1]);
  });

  it('reject with the error reply of a failing script, sent once', async () => {
    const failing = batchScript(`-- script-call test ${process.pid}\nredis.call('INCR', ARGV[1])\nreturn redis.error_reply('BROKEN ' .. ARGV[2])`);
    await expect(callScript(redis, failing, argsOf(['n', 'here']))).rejects.toMatchObject({ name: 'ReplyError', message: 'BROKEN here' });
    expect(await admin.get('n')).toBe('1');
  });

  it('wait in the offline queue while reconnecting, then run', async () => {
    await echo();
    const before = await redis.client('ID');
    redis.disconnect(true);
    expect(await echo()).toEqual(VALUES.map(String));
    expect(await redis.client('ID')).not.toBe(before);
  });

  it('run in a client created a moment ago (before it is connected)', async () => {
    const fresh = createRedis(url, { db: db() });
    try {
      expect(await echo(fresh)).toEqual(VALUES.map(String));
    } finally {
      await fresh.quit();
    }
  });
});

describe('RedisGuards calls', () => {
  it('admit and complete after the script cache is flushed: the guard scripts are loaded again', async () => {
    const guards = new RedisGuards(redis);
    const p = params({ maxInflightPerEndpoint: 5, maxInflightPerDomain: () => 5 });
    await admin.script('FLUSH');
    expect(await guards.admit([req({ id: 'wh_1' }), req({ id: 'wh_2' })], p)).toMatchObject([{ kind: 'go' }, { kind: 'go' }]);
    await admin.script('FLUSH');
    await guards.complete([completion({ id: 'wh_1', outcome: 'success', counted: { endpoint: true, domain: true } })], p);
    expect(await admin.zrange(keys.inflight(EP), 0, -1)).toEqual(['wh_2']);
  });

  it('keep an endpoint hash that comes with two hosts in one call apart: each host counts its own lease', async () => {
    const guards = new RedisGuards(redis);
    const p = params({ maxInflightPerEndpoint: 5, maxInflightPerDomain: () => 5 });
    const reqs = [req({ id: 'wh_a1', host: 'a.example' }), req({ id: 'wh_b1', host: 'b.example' }), req({ id: 'wh_a2', host: 'a.example' })];
    expect(await guards.admit(reqs, p)).toMatchObject([{ kind: 'go' }, { kind: 'go' }, { kind: 'go' }]);
    expect(await admin.zrange(keys.domainInflight('a.example'), 0, -1)).toEqual(['wh_a1', 'wh_a2']);
    expect(await admin.zrange(keys.domainInflight('b.example'), 0, -1)).toEqual(['wh_b1']);
    await guards.complete([completion({ id: 'wh_b1', host: 'b.example', outcome: 'success', counted: { endpoint: true, domain: true } })], p);
    expect(await admin.exists(keys.domainInflight('b.example'))).toBe(0);
    expect(await admin.zrange(keys.domainInflight('a.example'), 0, -1)).toEqual(['wh_a1', 'wh_a2']);
  });
});
