import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys as redisKeys } from '../../core/domain/keys';
import { generateKey, type ApiKeyRecord } from '../../core/security/api-keys';
import { sleep } from '../helpers/poll';
import { freePort } from '../helpers/procs';
import { redisUrlOf } from '../helpers/redis-db';
import { edgeVars, fleetEnv, startBridge, startEdge, useFleetRedisDb, type Bridge, type Edge } from './helpers/stack';

// The edge's key check on a real howk-bridge and Redis: the mirror (`howk:keys`, written here
// as howk-api's mirror writes it) is the only authority, the check fails closed when the
// bridge cannot be reached, and strangers cannot make it read the mirror at will.
describe('the edge’s API key check against its mirror', () => {
  const env = fleetEnv();
  const db = useFleetRedisDb(env);
  let port: number;
  let bridge: Bridge | undefined;
  let redis: Redis;
  const edges: Edge[] = [];
  let a: { token: string; record: ApiKeyRecord };
  let b: { token: string; record: ApiKeyRecord };

  const edgeWith = async (extra: Record<string, string>) => {
    const e = await startEdge(edgeVars(env, `http://127.0.0.1:${port}`, { HOWK_API_AUTH_ENABLED: 'true', ...extra }));
    edges.push(e);
    return e;
  };
  // A route the edge does not serve: 404 once the key is accepted, and no Redis read of its own.
  const get = async (e: Edge, token: string, ip = '198.51.100.2') => {
    const r = await fetch(`${e.url}/webhooks`, { headers: { authorization: `Bearer ${token}`, 'cf-connecting-ip': ip } });
    const body = (await r.json()) as { error: { code: string } };
    return { status: r.status, code: body.error.code, retryAfter: r.headers.get('retry-after') };
  };
  const stranger = (n: number) => `howk_${(0xfeed0000 + n).toString(16).padStart(16, '0')}_${'A'.repeat(43)}`;

  beforeAll(async () => {
    redis = new Redis(redisUrlOf(db()));
    port = await freePort();
    [a, b] = await Promise.all([generateKey({ name: 'a', scopes: ['read'] }, new Date()), generateKey({ name: 'b', scopes: ['read'] }, new Date())]);
    // b was revoked on the fleet; the deploy-time list still holds its old record.
    await redis.hset(redisKeys.apiKeys(), a.record.id, JSON.stringify(a.record), b.record.id, JSON.stringify({ ...b.record, revoked_at: new Date().toISOString() }));
    bridge = await startBridge(env, port);
  });
  afterAll(async () => {
    await Promise.all(edges.map((e) => e.stop()));
    await bridge?.stop();
    redis?.disconnect();
  });

  it('reads an unknown id once, and answers a client flooding ids 429 after its share while another client still gets in', async () => {
    const edge = await edgeWith({ HOWK_EDGE_KEY_LOOKUP_RATE: '0.01', HOWK_EDGE_KEY_LOOKUP_BURST: '5', HOWK_EDGE_KEY_MISS_CACHE: '10s' });
    const flood = '203.0.113.7';
    const s0 = (await bridge!.stats()).redis_requests;
    expect((await get(edge, stranger(0), flood)).status).toBe(401);
    const s1 = (await bridge!.stats()).redis_requests;
    expect(s1 - s0).toBe(1);
    expect((await get(edge, stranger(0), flood)).status).toBe(401);
    expect((await bridge!.stats()).redis_requests, 'the second lookup of the same unknown id').toBe(s1);
    // Four more ids fill the client's burst of 5; the next one is refused before the bridge.
    for (let i = 1; i <= 4; i++) expect((await get(edge, stranger(i), flood)).status).toBe(401);
    const over = await get(edge, stranger(5), flood);
    expect(over).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(Number(over.retryAfter)).toBeGreaterThan(0);
    expect((await get(edge, stranger(6), flood)).status).toBe(429);
    expect((await bridge!.stats()).redis_requests - s1).toBe(4);
    // Another client's valid key is still read and accepted; a revoked one refused.
    expect((await get(edge, a.token)).status).toBe(404);
    expect((await get(edge, b.token)).status).toBe(401);
  });

  it('refuses a revoked key while the mirror cannot be read: 503 key_check_unavailable, never the deploy-time list', async () => {
    const bootstrap = JSON.stringify([a.record, b.record]);
    const edge = await edgeWith({ HOWK_EDGE_KEY_CACHE: '5s', HOWK_EDGE_API_KEYS: bootstrap });
    expect((await get(edge, a.token)).status).toBe(404);
    const readAt = Date.now();
    expect((await get(edge, b.token)).status).toBe(401);
    await bridge!.stop();
    bridge = undefined;
    // Within the cache time the records read from the mirror still count, either way.
    expect(Date.now() - readAt).toBeLessThan(4000);
    expect((await get(edge, a.token)).status).toBe(404);
    expect((await get(edge, b.token)).status).toBe(401);
    // Past it, no key can be checked: 503, not the stale record, not the list, not 401.
    await sleep(Math.max(0, readAt + 5100 - Date.now()));
    for (const t of [a.token, b.token]) {
      const r = await get(edge, t);
      expect(r).toMatchObject({ status: 503, code: 'key_check_unavailable' });
      expect(Number(r.retryAfter)).toBeGreaterThan(0);
    }
    // A fresh isolate that never read the mirror: the deploy-time list does not let b in.
    const fresh = await edgeWith({ HOWK_EDGE_API_KEYS: bootstrap });
    expect(await get(fresh, b.token)).toMatchObject({ status: 503, code: 'key_check_unavailable' });
    // The bridge back: the mirror decides again.
    bridge = await startBridge(env, port);
    expect((await get(fresh, a.token)).status).toBe(404);
    expect((await get(fresh, b.token)).status).toBe(401);
  });
});
