import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { createRedis } from '../../workers/redis/client';
import { TEST_SECRET, TEST_SECRETS_KEY } from '../helpers/fleet';
import { requireEnv, uniq, waitFor } from '../helpers/env';
import { redisUrlOf, useRedisDb } from '../helpers/redis-db';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';

// Two howk-api processes on the same Kafka + Redis take creates of one uid at the same moment:
// exactly one is created (201), every other is Svix's 409, and both instances then list one
// object of that uid: for applications, and for endpoints within one application.

const redisDb = useRedisDb();
const N = 20;

describe('Svix uids are unique across two howk-api processes (Kafka + Redis)', () => {
  const procs: Proc[] = [];
  const apis: string[] = [];
  let topics: Record<string, string>;

  const call = (i: number, method: string, path: string, body?: unknown) =>
    fetch(`${apis[i % 2]}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = async <T>(r: Response | Promise<Response>): Promise<T> => (await (await r).json()) as T;
  type Listed = { data: { id: string; uid: string | null }[] };

  beforeAll(async () => {
    const redis = createRedis(redisUrlOf(redisDb()));
    await redis.flushdb();
    await redis.quit();
    const runId = uniq('svix-uids');
    topics = Object.fromEntries(Object.keys(loadConfig({ env: {} }).kafka.topics).map((k) => [k, `${runId}.${k}`]));
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      apis.push(`http://127.0.0.1:${port}`);
      const env: Record<string, string> = {
        HOWK_API_HOST: '127.0.0.1',
        HOWK_API_PORT: String(port),
        HOWK_API_AUTH_ENABLED: 'false',
        HOWK_KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'),
        HOWK_KAFKA_CONSUMER_GROUP: `${runId}-workers`,
        HOWK_REDIS_URL: redisUrlOf(redisDb()),
        HOWK_SIGNING_DEFAULT_SECRET: TEST_SECRET,
        HOWK_SECRETS_KEY: TEST_SECRETS_KEY,
        HOWK_LOG_LEVEL: 'warn',
      };
      for (const [k, v] of Object.entries(topics)) env[`HOWK_KAFKA_TOPICS_${k.toUpperCase()}`] = v;
      procs.push(spawnRole('api', env));
    }
    for (const [i, api] of apis.entries())
      await waitFor(async () => (await fetch(`${api}/api/v1/app`).catch(() => undefined))?.status === 200, {
        timeoutMs: 90_000,
        intervalMs: 200,
        what: `howk-api ${i} serving the Svix API\n${procs[i]!.output()}`,
      });
  }, 120_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => stopProc(p)));
    if (topics) {
      const admin = new Kafka({ clientId: 'svix-uids', brokers: requireEnv('KAFKA_BROKERS').split(','), logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => undefined);
      await admin.disconnect();
    }
  });

  /** Both instances list exactly one object of `uid` under `path`, the same one. */
  const listedOnce = async (path: string, uid: string) => {
    const views = await waitFor(
      async () => {
        const v = await Promise.all([0, 1].map(async (i) => (await json<Listed>(call(i, 'GET', `${path}?limit=250`))).data.filter((x) => x.uid === uid).map((x) => x.id)));
        return v.every((ids) => ids.length === 1) && v[0]![0] === v[1]![0] ? v : undefined;
      },
      { what: `one ${uid} on both instances` },
    );
    return views[0]![0]!;
  };

  it(`${N} concurrent creates of one application uid over both instances: one 201, the rest 409, both list one`, async () => {
    const uid = uniq('app');
    const answers = await Promise.all(Array.from({ length: N }, (_, i) => call(i, 'POST', '/api/v1/app', { name: `a${i}`, uid })));
    const statuses = answers.map((r) => r.status);
    expect(
      statuses.filter((s) => s === 201),
      statuses.join(','),
    ).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(N - 1);
    const conflict = await answers.find((r) => r.status === 409)!.json();
    expect(conflict).toMatchObject({ code: 'conflict', detail: expect.stringContaining(uid), error: { code: 'conflict' } });
    const winner = (await answers.find((r) => r.status === 201)!.json()) as { id: string };
    expect(await listedOnce('/api/v1/app', uid)).toBe(winner.id);
    for (const i of [0, 1]) expect((await json<{ id: string }>(call(i, 'GET', `/api/v1/app/${uid}`))).id).toBe(winner.id);
  });

  it(`${N} concurrent creates of one endpoint uid in one application over both instances: one 201, the rest 409, both list one`, async () => {
    const app = await json<{ id: string }>(call(0, 'POST', '/api/v1/app', { name: 'eps' }));
    await waitFor(async () => (await call(1, 'GET', `/api/v1/app/${app.id}`)).status === 200, { what: 'the application on instance 1' });
    const answers = await Promise.all(Array.from({ length: N }, (_, i) => call(i, 'POST', `/api/v1/app/${app.id}/endpoint`, { url: `https://example.com/${i}`, uid: 'same' })));
    const statuses = answers.map((r) => r.status);
    expect(
      statuses.filter((s) => s === 201),
      statuses.join(','),
    ).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(N - 1);
    const winner = (await answers.find((r) => r.status === 201)!.json()) as { id: string };
    expect(await listedOnce(`/api/v1/app/${app.id}/endpoint`, 'same')).toBe(winner.id);
  });

  it('an update that sets a uid another object holds is 409 and changes nothing, on either instance', async () => {
    const taken = uniq('taken');
    const holder = await json<{ id: string }>(call(0, 'POST', '/api/v1/app', { name: 'holder', uid: taken }));
    const other = await json<{ id: string }>(call(0, 'POST', '/api/v1/app', { name: 'other', uid: uniq('other') }));
    await waitFor(async () => (await call(1, 'GET', `/api/v1/app/${other.id}`)).status === 200, { what: 'both applications on instance 1' });
    for (const i of [0, 1]) {
      const r = await call(i, 'PUT', `/api/v1/app/${other.id}`, { name: 'other', uid: taken });
      expect(r.status).toBe(409);
      expect(await r.json()).toMatchObject({ code: 'conflict', error: { code: 'conflict' } });
    }
    const ep = await json<{ id: string }>(call(0, 'POST', `/api/v1/app/${holder.id}/endpoint`, { url: 'https://example.com/a', uid: 'a' }));
    const b = await json<{ id: string }>(call(0, 'POST', `/api/v1/app/${holder.id}/endpoint`, { url: 'https://example.com/b', uid: 'b' }));
    await waitFor(async () => (await call(1, 'GET', `/api/v1/app/${holder.id}/endpoint/b`)).status === 200, { what: 'the endpoints on instance 1' });
    expect((await call(1, 'PUT', `/api/v1/app/${holder.id}/endpoint/${b.id}`, { url: 'https://example.com/b', uid: 'a' })).status).toBe(409);
    expect(await listedOnce('/api/v1/app', taken)).toBe(holder.id);
    expect(await listedOnce(`/api/v1/app/${holder.id}/endpoint`, 'a')).toBe(ep.id);
    expect(await listedOnce(`/api/v1/app/${holder.id}/endpoint`, 'b')).toBe(b.id);
  });

  it('10 applications renamed to one free uid at once over both instances: one 200, the rest 409 keep their old uid', async () => {
    const apps: { id: string; uid: string }[] = [];
    for (let i = 0; i < 10; i++) apps.push(await json<{ id: string; uid: string }>(call(0, 'POST', '/api/v1/app', { name: `r${i}`, uid: uniq(`r${i}`) })));
    await waitFor(async () => (await call(1, 'GET', `/api/v1/app/${apps[9]!.id}`)).status === 200, { what: 'the applications on instance 1' });
    const target = uniq('renamed');
    const answers = await Promise.all(apps.map((a, i) => call(i, 'PUT', `/api/v1/app/${a.id}`, { name: `r${i}`, uid: target })));
    const statuses = answers.map((r) => r.status);
    expect(
      statuses.filter((s) => s === 200),
      statuses.join(','),
    ).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(9);
    const renamed = apps[statuses.indexOf(200)]!;
    expect(await listedOnce('/api/v1/app', target)).toBe(renamed.id);
    for (const a of apps.filter((x) => x !== renamed)) expect(await listedOnce('/api/v1/app', a.uid)).toBe(a.id);
  });
});
