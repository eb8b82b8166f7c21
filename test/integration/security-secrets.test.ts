import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../core/ports/logger';
import { KafkaLog } from '../../workers/kafka/log';
import { createRedis } from '../../workers/redis/client';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { startTestFleet, TEST_SECRET, TEST_SECRETS_KEY, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';

const whsec = (seed: string) => `whsec_${Buffer.from(seed.padEnd(32, '.')).toString('base64')}`;

// Per-config signing secrets with rotation, on Kafka + Redis, then a grep of everything the
// run left behind (every topic, every Redis key, every log line) for every secret it used.
describe('per-config signing secrets and secret hygiene (Kafka + Redis)', () => {
  let f: TestFleet;
  let rx: Receiver;
  const lines: string[] = [];
  let admin = '';
  let enqueuer = '';
  const S1 = whsec('first-config-secret');
  const S2 = whsec('second-config-secret');
  let S3 = '';
  const P1 = whsec('per-request-secret');
  const HEADER_SECRET = 'Bearer hide-me-header-value-42';
  const ids: string[] = [];

  beforeAll(async () => {
    rx = await startReceiver((r) => (r.path.startsWith('/reject') ? { status: 400, body: 'no' } : { status: 200 }));
    f = await startTestFleet('kafka', {
      log: createLogger('test', 'debug', (l) => lines.push(l)),
      overrides: { 'api.auth.enabled': true, 'signing.rotation_overlap': 1500 },
    });
    await f.fleet.security!.ready;
    admin = (await f.fleet.security!.keys!.create({ scopes: ['admin'] })).key;
    enqueuer = (await f.fleet.security!.keys!.create({ scopes: ['enqueue'], config_ids: ['rot'] })).key;
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const api = async (method: string, path: string, key: string, body?: unknown) => {
    const r = await fetch(f.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, json: (await r.json()) as any, text: '' };
  };
  const deliverOne = async (path: string, extra: Record<string, unknown> = {}) => {
    const res = await api('POST', '/webhooks/rot/enqueue', enqueuer, { endpoint: rx.url(path), payload: { path }, ...extra });
    expect(res.status).toBe(202);
    ids.push(res.json.webhook_id);
    return waitFor(() => rx.received.find((r) => r.path === path), { what: `delivery to ${path}` });
  };
  const sigCount = (r: { headers: Record<string, unknown> }) => String(r.headers['webhook-signature']).split(' ').length;

  it('signs with the config secret; during a rotation with both; after the overlap with the new one only', async () => {
    const put = await api('PUT', '/configs/rot/secret', admin, { secret: S1 });
    expect(put.status).toBe(200);
    expect(put.json.secrets).toHaveLength(1);
    const r1 = await deliverOne('/one');
    expect(verifyStandardWebhook(S1, r1.headers as any, r1.body)).toBe(true);
    expect(verifyStandardWebhook(TEST_SECRET, r1.headers as any, r1.body)).toBe(false);
    expect(sigCount(r1)).toBe(1);

    const rot = await api('POST', '/configs/rot/secret/rotate', admin, { secret: S2 });
    expect(rot.status).toBe(200);
    expect(rot.json.secret).toBeUndefined();
    expect(rot.json.secrets.map((s: any) => s.expires_at === null)).toEqual([true, false]);
    const r2 = await deliverOne('/two');
    expect(sigCount(r2)).toBe(2);
    expect(verifyStandardWebhook(S1, r2.headers as any, r2.body)).toBe(true);
    expect(verifyStandardWebhook(S2, r2.headers as any, r2.body)).toBe(true);

    await new Promise((r) => setTimeout(r, 1600));
    const r3 = await deliverOne('/three');
    expect(sigCount(r3)).toBe(1);
    expect(verifyStandardWebhook(S2, r3.headers as any, r3.body)).toBe(true);
    expect(verifyStandardWebhook(S1, r3.headers as any, r3.body)).toBe(false);

    // A rotation without a secret generates one and shows it once.
    const gen = await api('POST', '/configs/rot/secret/rotate', admin);
    expect(gen.status).toBe(200);
    S3 = gen.json.secret;
    expect(S3).toMatch(/^whsec_/);
    const r4 = await deliverOne('/four');
    expect(verifyStandardWebhook(S3, r4.headers as any, r4.body)).toBe(true);
    expect(verifyStandardWebhook(S2, r4.headers as any, r4.body)).toBe(true);
    const desc = await api('GET', '/configs/rot/secret', admin);
    expect(desc.json.secrets).toHaveLength(2);
    expect(JSON.stringify(desc.json)).not.toMatch(/whsec_|enc:v1/);
  });

  it('a per-request secret still wins, and a dead letter keeps no secret', async () => {
    const r5 = await deliverOne('/reject', { signing_secret: P1, headers: { Authorization: HEADER_SECRET } });
    expect(verifyStandardWebhook(P1, r5.headers as any, r5.body)).toBe(true);
    const dl = await waitFor(() => f.records('deadletter').find((r) => r.value?.includes(ids[ids.length - 1]!)), { what: 'dead letter' });
    expect(JSON.parse(dl.value!).webhook.headers.Authorization).toBe('[redacted]');
    expect(JSON.parse(dl.value!).webhook.signing_secret).toBeUndefined();
  });

  it('leaves no secret value in any topic, Redis key, log line, dead letter or status', async () => {
    const secrets = [S1, S2, S3, P1, admin, enqueuer, TEST_SECRETS_KEY, ...[S1, S2, S3, P1].map((s) => s.slice(6)), admin.slice(22), enqueuer.slice(22)];
    const t = f.config.kafka.topics;
    const topics = [t.pending, t.slow, t.results, t.deadletter, t.state, t.keys, t.config_secrets];
    const log = new KafkaLog({ brokers: f.config.kafka.brokers, clientId: 'grep', produceTimeoutMs: 5000, maxWaitMs: 20, maxBytesPerPartition: 1 << 20 });
    const seen = new Map<string, string[]>();
    const consumer = log.consumer({ groupId: uniq('grep'), topics, fromBeginning: true });
    await consumer.run(async (b) => void seen.set(b.topic, [...(seen.get(b.topic) ?? []), ...b.records.map((r) => `${r.key} ${r.value}`)]));
    await waitFor(() => (seen.get(t.results)?.length ?? 0) >= 5 && (seen.get(t.config_secrets)?.length ?? 0) >= 3 && (seen.get(t.deadletter)?.length ?? 0) >= 1, {
      what: 'topics read back',
    });
    await log.close();
    const redis = createRedis(requireEnv('REDIS_URL'), { db: f.redisDb });
    const redisDump: string[] = [];
    for (const k of await redis.keys('*')) redisDump.push(k, (await redis.dumpBuffer(k))?.toString('latin1') ?? '');
    await redis.quit();
    const statuses = await Promise.all(ids.map(async (id) => JSON.stringify((await api('GET', `/webhooks/${id}/status`, admin)).json)));
    const places: Record<string, string> = {
      ...Object.fromEntries([...seen].map(([topic, recs]) => [`topic ${topic}`, recs.join('\n')])),
      redis: redisDump.join('\n'),
      logs: lines.join('\n'),
      statuses: statuses.join('\n'),
    };
    expect(lines.length).toBeGreaterThanOrEqual(4);
    expect(places.logs).toContain('config signing secret rotated');
    for (const [where, text] of Object.entries(places)) {
      for (const s of secrets) expect(text.includes(s), `${where} holds a secret (${s.slice(0, 10)}…)`).toBe(false);
    }
    // The custom header travels to the endpoint on purpose (pending), but never into a dead letter or a log.
    for (const where of [`topic ${t.deadletter}`, 'logs', 'statuses', `topic ${t.results}`]) expect(places[where]!.includes('hide-me-header-value'), where).toBe(false);
    // The secrets are there, sealed.
    expect(places[`topic ${t.config_secrets}`]).toMatch(/"sealed":"enc:v1:k1:/);
  });
});
