import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiException, Svix, Webhook } from 'svix';
import { MemoryGuards } from '../../core/memory/guards';
import { MemoryHotState } from '../../core/memory/hot-state';
import { systemClock } from '../../core/ports/clock';
import { silentLogger } from '../../core/ports/logger';
import { createSecretBox } from '../../core/signing/secret-box';
import { startFleet, type Fleet } from '../../workers/node/fleet';
import { createHttpSender } from '../../workers/node/sender';
import { SqliteLog } from '../../workers/sqlite/log';
import { waitFor } from '../helpers/env';
import { testConfig, TEST_SECRETS_KEY } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// The Svix API on howk-dev's embedded storage (the SQLite log, hot state in memory): the
// official client works the same, the limits hold, and applications, endpoints (their secrets
// too) and messages are read back from the log after a restart.

const config = testConfig('memory', {
  'svix.max_endpoints_per_app': 3,
  'svix.max_applications': 2,
  'svix.max_event_types': 2,
  'api.max_outstanding_per_config': 5,
  'svix.max_filter_types': 2,
  'api.max_request_size': 4096,
  'svix.max_fanout_bytes': 3000,
});

describe('Svix API on the embedded storage (howk-dev)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'howk-svix-'));
  let rx: Receiver;
  let run: { fleet: Fleet; log: SqliteLog; stop(): Promise<void> };

  const start = async () => {
    const log = new SqliteLog({ path: join(dir, 'howk.db') });
    const sender = createHttpSender({ connectionsPerOrigin: 4, snippetBytes: 1024, allowedNetworks: config.delivery.allowed_networks });
    const hot = new MemoryHotState({ status_ttl: config.ttl.status_ttl, stats_ttl: config.ttl.stats_ttl, retry_data_ttl: config.ttl.retry_data_ttl }, systemClock);
    const secretBox = await createSecretBox('k1', { k1: TEST_SECRETS_KEY });
    const fleet = await startFleet({ config, logStore: log, hot, sender, log: silentLogger, secretBox, guards: new MemoryGuards() });
    await fleet.apps!.ready;
    return {
      fleet,
      log,
      stop: async () => {
        await fleet.stop();
        await sender.close();
        await hot.close();
        await log.close();
      },
    };
  };
  const client = () => new Svix('any', { serverUrl: run.fleet.baseUrl! });

  beforeAll(async () => {
    rx = await startReceiver((r) => ({ status: r.path.startsWith('/down') ? 503 : 200 }));
    run = await start();
  });
  afterAll(async () => {
    await run?.stop();
    await rx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers a message to the endpoint whose filter matches, verified with its secret; limits refuse with 409 and store nothing; all of it survives a restart', async () => {
    let svix = client();
    const app = await svix.application.create({ name: 'Dev', uid: 'dev-app' });
    await svix.eventType.create({ name: 'a.b', description: 'first' });
    await svix.eventType.create({ name: 'c.d', description: 'second' });
    const third = await svix.eventType.create({ name: 'e.f', description: 'over the limit' }).catch((e: ApiException<any>) => e);
    expect(third).toBeInstanceOf(ApiException);
    expect((third as ApiException<any>).code).toBe(409);
    expect((third as ApiException<any>).body.code).toBe('limit_reached');

    const one = await svix.endpoint.create(app.id, { url: rx.url('/dev/1'), filterTypes: ['a.b'] });
    await svix.endpoint.create(app.id, { url: rx.url('/dev/2'), filterTypes: ['c.d'] });
    await svix.endpoint.create(app.id, { url: rx.url('/dev/3'), channels: ['eu'] });
    const fourth = await svix.endpoint.create(app.id, { url: rx.url('/dev/4') }).catch((e: ApiException<any>) => e);
    expect((fourth as ApiException<any>).code).toBe(409);
    expect((await svix.endpoint.list(app.id)).data).toHaveLength(3);
    await svix.application.create({ name: 'Second' });
    expect(((await svix.application.create({ name: 'Third' }).catch((e) => e)) as ApiException<any>).code).toBe(409);

    const msg = await svix.message.create('dev-app', { eventType: 'a.b', payload: { hello: 'dev' }, eventId: 'dev-1' });
    const [r] = await waitFor(() => (rx.received.length ? rx.received : undefined));
    await new Promise((res) => setTimeout(res, 300));
    expect(rx.received.map((x) => x.path)).toEqual(['/dev/1']);
    const secret = (await svix.endpoint.getSecret(app.id, one.id)).key;
    expect(new Webhook(secret).verify(r!.body.toString(), Object.fromEntries(Object.entries(r!.headers).map(([k, v]) => [k, String(v)])))).toEqual({ hello: 'dev' });

    await run.stop();
    run = await start();
    svix = client();
    expect((await svix.application.get('dev-app')).id).toBe(app.id);
    expect((await svix.endpoint.list(app.id)).data.map((e) => e.url).sort()).toEqual([rx.url('/dev/1'), rx.url('/dev/2'), rx.url('/dev/3')]);
    expect((await svix.endpoint.getSecret(app.id, one.id)).key).toBe(secret);
    expect((await svix.message.get(app.id, msg.id)).payload).toEqual({ hello: 'dev' });
    // The same eventId after the restart: the same message, no second delivery.
    expect((await svix.message.create(app.id, { eventType: 'a.b', payload: { hello: 'dev' }, eventId: 'dev-1' })).id).toBe(msg.id);
    await new Promise((res) => setTimeout(res, 300));
    expect(rx.received).toHaveLength(1);
  });

  it("a message counts towards its application's outstanding bound: past it, 429 and nothing sent", async () => {
    const svix = client();
    const second = (await svix.application.list()).data.find((a) => a.name === 'Second')!;
    await svix.application.delete(second.id);
    expect(((await svix.application.get(second.id).catch((e) => e)) as ApiException<any>).code).toBe(404);
    const app = await svix.application.create({ name: 'Busy' });
    for (const i of [1, 2, 3]) await svix.endpoint.create(app.id, { url: rx.url(`/down/${i}`) });
    await svix.message.create(app.id, { eventType: 'x', payload: { n: 1 } });
    await svix.message.create(app.id, { eventType: 'x', payload: { n: 2 } });
    const refused = (await svix.message.create(app.id, { eventType: 'x', payload: { n: 3 } }).catch((e) => e)) as ApiException<any>;
    expect(refused.code).toBe(429);
    expect((await svix.message.list(app.id)).data).toHaveLength(2);
  });

  it('bounded input: filterTypes and channels past svix.max_filter_types answer 422, a message over api.max_request_size or svix.max_fanout_bytes 413; nothing stored', async () => {
    const svix = client();
    const before = (await svix.endpoint.list('dev-app')).data.length;
    const many = (await svix.endpoint.create('dev-app', { url: rx.url('/x'), filterTypes: ['a', 'b', 'c'] }).catch((e) => e)) as ApiException<any>;
    expect(many.code).toBe(422);
    expect(many.body.detail[0].loc).toEqual(['body', 'filterTypes']);
    const channels = (await svix.message.create('dev-app', { eventType: 'a.b', payload: {}, channels: ['a', 'b', 'c'] }).catch((e) => e)) as ApiException<any>;
    expect(channels.code).toBe(422);
    expect(channels.body.detail[0].loc).toEqual(['body', 'channels']);
    const big = (await svix.message.create('dev-app', { eventType: 'a.b', payload: { blob: 'x'.repeat(5000) } }).catch((e) => e)) as ApiException<any>;
    expect(big.code).toBe(413);
    // 1,600 bytes fit one request, but to two endpoints (a.b's filter, and the eu channel) they are 3,200 > svix.max_fanout_bytes.
    const fanout = (await svix.message.create('dev-app', { eventType: 'a.b', channels: ['eu'], payload: { blob: 'y'.repeat(1590) } }).catch((e) => e)) as ApiException<any>;
    expect(fanout.code).toBe(413);
    expect(fanout.body.detail).toMatch(/2 endpoints/);
    expect((await svix.endpoint.list('dev-app')).data).toHaveLength(before);
    expect((await svix.message.list('dev-app')).data).toHaveLength(1);
  });
});
