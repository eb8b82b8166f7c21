import { Redis } from 'ioredis';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keys as redisKeys } from '../../core/domain/keys';
import { generateKey } from '../../core/security/api-keys';
import { KafkaLog } from '../../workers/kafka/log';
import { runKeys } from '../../workers/cli/keys';
import { waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { redisUrlOf } from '../helpers/redis-db';
import { configOf, edgeVars, ensureTopics, fleetEnv, startBridge, startEdge, useFleetRedisDb, type Bridge, type Edge } from './helpers/stack';

// API keys at the edge come from the fleet: howk-api mirrors the keys topic into Redis, the
// edge reads it through the bridge (cached `edge.key_cache`). No Worker secret holds them.
describe('API keys at the edge, mirrored from the fleet', () => {
  const env = fleetEnv();
  const db = useFleetRedisDb(env);
  const KEY_CACHE_MS = 1000;
  const persist = mkdtempSync(join(tmpdir(), 'howk-edge-keys-'));
  let bridge: Bridge;
  let api: Proc;
  let edge: Edge;
  let redis: Redis;
  const tokens: { id: string; token: string }[] = [];

  const vars = () =>
    edgeVars(env, bridge.url, {
      HOWK_API_AUTH_ENABLED: 'true',
      HOWK_EDGE_KEY_CACHE: `${KEY_CACHE_MS}ms`,
      // 3 requests at once, then one per 100 s: the 4th is refused.
      HOWK_API_AUTH_RATE_LIMIT: '0.01',
      HOWK_API_AUTH_RATE_BURST: '3',
      // Every request here comes from one client: its lookups of uncached keys are not what
      // this file tests (key-check.test.ts does), and at the default burst a fast run spent it.
      HOWK_EDGE_KEY_LOOKUP_RATE: '0',
    });

  beforeAll(async () => {
    await ensureTopics(env);
    redis = new Redis(redisUrlOf(db()));
    // 1,000 keys on the keys topic, as `howk keys create` writes them (a record per key).
    const now = new Date();
    const made = await Promise.all(Array.from({ length: 1000 }, (_, i) => generateKey({ name: `k${i}`, scopes: ['read'] }, now)));
    for (const m of made) tokens.push({ id: m.record.id, token: m.token });
    const log = new KafkaLog({ brokers: env.HOWK_KAFKA_BROKERS!.split(','), clientId: 'edge-keys-test', produceTimeoutMs: 10_000, maxWaitMs: 20, maxBytesPerPartition: 1 << 20 });
    await log.producer().send(made.map((m) => ({ topic: configOf(env).kafka.topics.keys, key: m.record.id, value: JSON.stringify(m.record) })));
    await log.close();
    bridge = await startBridge(env);
    api = spawnRole('api', { ...env, HOWK_API_PORT: String(await freePort()), HOWK_API_HOST: '127.0.0.1' });
    await waitFor(async () => (await redis.hlen(redisKeys.apiKeys())) === 1000, { timeoutMs: 60_000, what: `1,000 keys mirrored\n${api.output()}` });
    edge = await startEdge(vars(), { persist });
  });
  afterAll(async () => {
    await edge?.stop();
    await Promise.all([api && stopProc(api), bridge?.stop()]);
    redis?.disconnect();
    rmSync(persist, { recursive: true, force: true });
  });

  // An authenticated read of a webhook that does not exist: 404 once the key is accepted.
  const read = (e: Edge, token: string) => fetch(`${e.url}/webhooks/wh_01HZZZZZZZZZZZZZZZZZZZZZZZ/status`, { headers: { authorization: `Bearer ${token}` } });

  it('accepts any of 1,000 keys created on the fleet, and refuses a token of none', async () => {
    // Random keys from 20-997 only: keys 7, 8, 11 and 12 belong to the tests below, and one
    // read of key 11 here would spend a token of the bucket the rate-limit test counts.
    const sample = [0, 1, 499, 998, 999, ...Array.from({ length: 15 }, () => 20 + Math.floor(Math.random() * 978))];
    for (const i of sample) expect((await read(edge, tokens[i]!.token)).status, `key ${i}`).toBe(404);
    const forged = tokens[5]!.token.slice(0, -4) + 'AAAA';
    expect((await read(edge, forged)).status).toBe(401);
  });

  it('refuses a key revoked on the fleet within the cache time', async () => {
    const victim = tokens[7]!;
    expect((await read(edge, victim.token)).status).toBe(404);
    const io = { out: () => {}, err: () => {} };
    expect(await runKeys(configOf(env), ['revoke', victim.id], io)).toBe(0);
    const revokedAt = Date.now();
    await waitFor(async () => (await read(edge, victim.token)).status === 401, { timeoutMs: 20_000, intervalMs: 100, what: 'the revocation at the edge' });
    const took = Date.now() - revokedAt;
    console.log(`revocation reached the edge in ${took} ms (key cache ${KEY_CACHE_MS} ms)`);
    // The mirror's write (a few ms after the replica applies it) plus at most one cache period.
    expect(took).toBeLessThan(KEY_CACHE_MS + 5000);
    expect(JSON.parse((await redis.hget(redisKeys.apiKeys(), victim.id))!).revoked_at).not.toBeNull();
    // The others still work.
    expect((await read(edge, tokens[8]!.token)).status).toBe(404);
  });

  it('rate-limits a key in shared storage: a fresh isolate does not reset its bucket', async () => {
    const k = tokens[11]!.token;
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await read(edge, k)).status);
    expect(statuses).toEqual([404, 404, 404, 429]);
    // A new Worker instance on the same Durable Object storage (a redeploy, another isolate).
    await edge.stop();
    edge = await startEdge(vars(), { persist });
    expect((await read(edge, k)).status).toBe(429);
    expect((await read(edge, tokens[12]!.token)).status).toBe(404);
  });
});
