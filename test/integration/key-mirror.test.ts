import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { keys } from '../../core/domain/keys';
import { generateKey } from '../../core/security/api-keys';
import { createKeyMirror } from '../../workers/redis/key-mirror';
import { useFlushedRedis } from '../helpers/flushed-redis';

// The edge's mirror of the API-key table (mirrorKey.lua through createKeyMirror), on real Redis.
let redis: Redis;
useFlushedRedis((r) => (redis = r));

describe('key mirror', () => {
  it('writes records as applied, keeps a revocation against an older record replayed later, and drops tombstones', async () => {
    const mirror = createKeyMirror(redis, { flushMs: 1 });
    const { record } = await generateKey({ scopes: ['enqueue'] }, new Date());
    const revoked = { ...record, revoked_at: new Date().toISOString() };
    mirror.apply(record.id, JSON.stringify(record));
    await mirror.flush();
    expect(JSON.parse((await redis.hget(keys.apiKeys(), record.id))!)).toEqual(record);
    mirror.apply(record.id, JSON.stringify(revoked));
    await mirror.flush();
    // A replica that starts late replays the topic from its beginning: the live record again.
    mirror.apply(record.id, JSON.stringify(record));
    await mirror.flush();
    expect(JSON.parse((await redis.hget(keys.apiKeys(), record.id))!).revoked_at).toBe(revoked.revoked_at);
    mirror.apply(record.id, null);
    await mirror.flush();
    expect(await redis.hexists(keys.apiKeys(), record.id)).toBe(0);
    await mirror.stop();
  });

  it('writes the whole table again every refresh, so a Redis that lost it has it back', async () => {
    const mirror = createKeyMirror(redis, { flushMs: 1, refreshMs: 100 });
    const made = await Promise.all([1, 2, 3].map(() => generateKey({ scopes: ['read'] }, new Date())));
    for (const m of made) mirror.apply(m.record.id, JSON.stringify(m.record));
    await mirror.flush();
    expect(await redis.hlen(keys.apiKeys())).toBe(3);
    await redis.del(keys.apiKeys());
    const t0 = Date.now();
    while ((await redis.hlen(keys.apiKeys())) < 3 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 20));
    expect(await redis.hlen(keys.apiKeys())).toBe(3);
    await mirror.stop();
  });
});
