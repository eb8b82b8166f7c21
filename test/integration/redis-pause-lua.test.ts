import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useFlushedRedis } from '../helpers/flushed-redis';
import { SCRIPTS, type ScriptName } from '../../workers/redis/scripts';

// The pause scripts against real Redis, called directly by their header contracts (KEYS,
// ARGV, returns). A db of its own (useFlushedRedis), flushed before each test.
// The pause value: 'paused' | 'draining', with ':<drain>:<lease until ms>' while a drain owns the scope.
let redis: Redis;
useFlushedRedis((r) => (redis = r));

const run = (name: ScriptName, keys: string[], args: (string | number)[]) => redis.eval(SCRIPTS[name].lua, SCRIPTS[name].numberOfKeys, ...keys, ...args);
const K = ['paused:config:cfg', 'paused_queue:config:cfg'];
const NOW = 1_750_000_000_000;
const hold = async (...items: string[]) => redis.rpush(K[1]!, ...items);

describe('pauseScope-1.lua', () => {
  it('sets paused, keeping the lease of a drain in progress', async () => {
    expect(await run('pauseScope', [K[0]!], [])).toBe(1);
    expect(await redis.get(K[0]!)).toBe('paused');
    await redis.set(K[0]!, `draining:d1:${NOW}`);
    await run('pauseScope', [K[0]!], []);
    expect(await redis.get(K[0]!)).toBe(`paused:d1:${NOW}`);
    await redis.set(K[0]!, 'draining');
    await run('pauseScope', [K[0]!], []);
    expect(await redis.get(K[0]!)).toBe('paused');
  });
});

describe('resumeScope-1.lua', () => {
  it("returns 'none' and writes nothing when not paused", async () => {
    expect(await run('resumeScope', [K[0]!], ['d1', NOW, 30_000])).toBe('none');
    expect(await redis.dbsize()).toBe(0);
  });

  it("takes the scope ('drain') unless a live lease holds it ('running', draining again)", async () => {
    await redis.set(K[0]!, 'paused');
    expect(await run('resumeScope', [K[0]!], ['d1', NOW, 30_000])).toBe('drain');
    expect(await redis.get(K[0]!)).toBe(`draining:d1:${NOW + 30_000}`);
    await run('pauseScope', [K[0]!], []);
    expect(await run('resumeScope', [K[0]!], ['d2', NOW + 29_999, 30_000])).toBe('running');
    expect(await redis.get(K[0]!)).toBe(`draining:d1:${NOW + 30_000}`);
    expect(await run('resumeScope', [K[0]!], ['d2', NOW + 30_000, 30_000])).toBe('drain');
    expect(await redis.get(K[0]!)).toBe(`draining:d2:${NOW + 60_000}`);
  });
});

describe('takeHeld-2.lua', () => {
  it('returns a batch in arrival order without removing it and renews the lease', async () => {
    await redis.set(K[0]!, `draining:d1:${NOW}`);
    await hold('a', 'b', 'c');
    expect(await run('takeHeld', K, ['d1', NOW + 5, 100, 2])).toEqual(['batch', ['a', 'b']]);
    expect(await redis.get(K[0]!)).toBe(`draining:d1:${NOW + 105}`);
    expect(await redis.llen(K[1]!)).toBe(3);
  });

  it("returns {'lost'} to a drain that does not own the scope", async () => {
    await redis.set(K[0]!, `draining:d1:${NOW}`);
    await hold('a');
    expect(await run('takeHeld', K, ['d2', NOW, 100, 2])).toEqual(['lost']);
    await redis.set(K[0]!, 'draining');
    expect(await run('takeHeld', K, ['d1', NOW, 100, 2])).toEqual(['lost']);
    await redis.del(K[0]!);
    expect(await run('takeHeld', K, ['d1', NOW, 100, 2])).toEqual(['lost']);
  });

  it("returns {'paused'} and gives the lease up when paused again", async () => {
    await redis.set(K[0]!, `paused:d1:${NOW}`);
    await hold('a');
    expect(await run('takeHeld', K, ['d1', NOW, 100, 2])).toEqual(['paused']);
    expect(await redis.get(K[0]!)).toBe('paused');
    expect(await redis.llen(K[1]!)).toBe(1);
  });

  it("returns {'done'} and ends the pause when nothing is held", async () => {
    await redis.set(K[0]!, `draining:d1:${NOW}`);
    expect(await run('takeHeld', K, ['d1', NOW, 100, 2])).toEqual(['done']);
    expect(await redis.dbsize()).toBe(0);
  });
});

describe('dropHeld-2.lua', () => {
  it('removes the first n for the owning drain and returns how many remain', async () => {
    await redis.set(K[0]!, `draining:d1:${NOW}`);
    await hold('a', 'b', 'c', 'd');
    expect(await run('dropHeld', K, ['d1', 1])).toBe(3);
    expect(await redis.lrange(K[1]!, 0, -1)).toEqual(['b', 'c', 'd']);
    expect(await run('dropHeld', K, ['d2', 2])).toBe(-1);
    expect(await redis.llen(K[1]!)).toBe(3);
  });

  it('ends a draining pause when the queue empties; keeps a pause (and its lease) that came back', async () => {
    await redis.set(K[0]!, `paused:d1:${NOW}`);
    await hold('a');
    expect(await run('dropHeld', K, ['d1', 5])).toBe(0);
    expect(await redis.get(K[0]!)).toBe(`paused:d1:${NOW}`);
    await redis.set(K[0]!, `draining:d1:${NOW}`);
    await hold('b');
    expect(await run('dropHeld', K, ['d1', 5])).toBe(0);
    expect(await redis.dbsize()).toBe(0);
  });

  it('returns -1 for a scope with no pause, writing nothing', async () => {
    expect(await run('dropHeld', K, ['d1', 3])).toBe(-1);
    expect(await redis.dbsize()).toBe(0);
  });
});

describe('holdPaused-2.lua', () => {
  it('returns 0 and queues nothing when the scope is not paused', async () => {
    expect(await run('holdPaused', K, ['w1', ''])).toBe(0);
    expect(await redis.exists(K[1]!)).toBe(0);
  });

  it('appends in arrival order and returns 1 while paused or draining', async () => {
    await redis.set(K[0]!, 'paused');
    expect(await run('holdPaused', K, ['w1', ''])).toBe(1);
    await redis.set(K[0]!, `draining:d1:${NOW}`);
    expect(await run('holdPaused', K, ['w2', 'd0'])).toBe(1);
    expect(await redis.lrange(K[1]!, 0, -1)).toEqual(['w1', 'w2']);
  });

  it("returns 2 (pass) for a webhook the draining scope's own drain released, holding nothing", async () => {
    await redis.set(K[0]!, `draining:d1:${NOW}`);
    expect(await run('holdPaused', K, ['w1', 'd0,d1'])).toBe(2);
    expect(await run('holdPaused', K, ['w2', 'd1x'])).toBe(1);
    await redis.set(K[0]!, `paused:d1:${NOW}`);
    expect(await run('holdPaused', K, ['w3', 'd1'])).toBe(1);
    expect(await redis.lrange(K[1]!, 0, -1)).toEqual(['w2', 'w3']);
  });
});

describe('restoreHeld-2.lua', () => {
  it('returns -1 and writes nothing when the scope is not paused', async () => {
    expect(await run('restoreHeld', K, ['a', 'b'])).toBe(-1);
    expect(await redis.dbsize()).toBe(0);
  });

  it('appends in order after what is held, skipping records the queue holds already (paused or draining)', async () => {
    await redis.set(K[0]!, 'paused');
    await hold('b');
    expect(await run('restoreHeld', K, ['a', 'b', 'c', 'a'])).toBe(2);
    expect(await redis.lrange(K[1]!, 0, -1)).toEqual(['b', 'a', 'c']);
    await redis.set(K[0]!, `draining:d1:${NOW}`);
    expect(await run('restoreHeld', K, ['c', 'd'])).toBe(1);
    expect(await redis.lrange(K[1]!, 0, -1)).toEqual(['b', 'a', 'c', 'd']);
    expect(await redis.get(K[0]!)).toBe(`draining:d1:${NOW}`);
  });
});

describe('restoreCircuit-1.lua', () => {
  const C = 'circuit:ep';
  it('opens a circuit that has no state, with its TTL', async () => {
    expect(await run('restoreCircuit', [C], [NOW + 5_000, 3, 60_000])).toBe(1);
    expect(await redis.hgetall(C)).toEqual({ state: 'OPEN', open_until: String(NOW + 5_000), opened_count: '3' });
    const ttl = await redis.pttl(C);
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('keeps a live open or half-open circuit as it is, and replaces a closed one', async () => {
    await redis.hset(C, { state: 'HALF_OPEN', probe_at: NOW });
    expect(await run('restoreCircuit', [C], [NOW + 5_000, 3, 60_000])).toBe(0);
    expect(await redis.hgetall(C)).toEqual({ state: 'HALF_OPEN', probe_at: String(NOW) });
    await redis.del(C);
    await redis.hset(C, { state: 'CLOSED', failures: 1, window_start: NOW });
    expect(await run('restoreCircuit', [C], [NOW + 5_000, 3, 60_000])).toBe(1);
    expect(await redis.hgetall(C)).toEqual({ state: 'OPEN', open_until: String(NOW + 5_000), opened_count: '3' });
  });
});
