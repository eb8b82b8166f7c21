import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { keys } from '../../core/domain/keys';
import { createLuaEngine } from '../../core/lua/engine';
import { runDeliveryScript } from '../../core/lua/delivery';
import { runRedisKeys } from '../../workers/cli/redis-keys';
import { createRedis } from '../../workers/redis/client';
import { redisKv } from '../../workers/redis/lua-kv';
import { redisUrlOf, useRedisDb } from '../helpers/redis-db';

// `howk redis-keys migrate-kv` on real Redis (a db of its own, flushed before each test): Lua kv entries
// written as kv:<owner>:<key> before owners were tagged reach their owner's scripts again.

const db = useRedisDb();
let url: string;

let redis: Redis;
let dir: string;
beforeAll(async () => {
  url = redisUrlOf(db());
  redis = createRedis(url);
  dir = await mkdtemp(join(tmpdir(), 'howk-kv-migration-'));
  await writeFile(join(dir, 'dedupe.lua'), 'return');
});
afterAll(async () => {
  await redis.quit();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  await redis.flushdb();
});

const run = async (...argv: string[]) => {
  const out: string[] = [];
  const err: string[] = [];
  const config = loadConfig({ env: {}, overrides: { 'redis.url': url, 'transformer.script_dirs': [dir] } });
  const code = await runRedisKeys(config, argv, { out: (s) => out.push(s), err: (s) => err.push(s) });
  return { code, report: out.length ? JSON.parse(out[0]!) : undefined, err: err.join('\n') };
};

describe('howk redis-keys migrate-kv', () => {
  it('reports without writing, then copies each entry to its one owner with its TTL; ambiguous and unowned entries stay', async () => {
    await redis.set('kv:dedupe:seen:e1', '1', 'EX', 3600); // transformer from transformer.script_dirs
    await redis.set('kv:shop:counter', '7'); // config named with --configs
    await redis.set('kv:wh:42:k', 'x'); // wh's "42:k" or wh:42's "k": both named
    await redis.set('kv:stranger:k', 'y'); // nobody named
    await redis.set(keys.kv({ kind: 'config', id: 'shop' }, 'fresh'), 'new'); // already tagged

    const dry = await run('migrate-kv', '--configs', 'shop,wh,wh:42');
    expect(dry.code).toBe(0);
    expect(dry.report).toMatchObject({ dry_run: true, scanned: 4, copied: 2, ambiguous: 1, unowned: 1 });
    expect(dry.report.ambiguous_sample).toEqual([
      {
        key: 'kv:wh:42:k',
        candidates: [
          { kind: 'config', id: 'wh' },
          { kind: 'config', id: 'wh:42' },
        ],
      },
    ]);
    expect(await redis.exists(keys.kv({ kind: 'config', id: 'shop' }, 'counter'))).toBe(0);

    const applied = await run('migrate-kv', '--configs', 'shop,wh,wh:42', '--apply');
    expect(applied.report).toMatchObject({ dry_run: false, copied: 2, kept_newer: 0, deleted_old: 0, ambiguous: 1, unowned: 1 });
    const seen = keys.kv({ kind: 'transformer', id: 'dedupe' }, 'seen:e1');
    expect(await redis.get(seen)).toBe('1');
    expect(await redis.ttl(seen)).toBeGreaterThan(3500);
    expect(await redis.ttl(keys.kv({ kind: 'config', id: 'shop' }, 'counter'))).toBe(-1);
    // What a script of config "shop" reads now.
    const out = await runDeliveryScript(
      `request.body = tostring(kv.get('counter'))`,
      { payload: '{}', headers: {}, config_id: 'shop', attempt: 0 },
      { engine: createLuaEngine(), services: { kv: redisKv(redis) } },
    );
    expect(out.body).toBe('7');
    expect(await redis.get('kv:wh:42:k')).toBe('x');
    expect(await redis.keys('kv:*wh*')).toEqual(['kv:wh:42:k']);
  });

  it('never overwrites what a script wrote since the upgrade; --delete-old removes the copied old keys', async () => {
    await redis.set('kv:shop:counter', 'old');
    await redis.set('kv:shop:other', 'o');
    await redis.set(keys.kv({ kind: 'config', id: 'shop' }, 'counter'), 'newer');
    const r = await run('migrate-kv', '--configs', 'shop', '--apply', '--delete-old');
    expect(r.report).toMatchObject({ copied: 1, kept_newer: 1, deleted_old: 2 });
    expect(await redis.get(keys.kv({ kind: 'config', id: 'shop' }, 'counter'))).toBe('newer');
    expect(await redis.get(keys.kv({ kind: 'config', id: 'shop' }, 'other'))).toBe('o');
    expect(await redis.keys('kv:shop:*')).toEqual([]);
  });

  it('refuses --delete-old without --apply and unknown commands (exit 2, usage)', async () => {
    expect((await run('migrate-kv', '--delete-old')).code).toBe(2);
    const bad = await run('migrate');
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/usage:/);
  });
});
