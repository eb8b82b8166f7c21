import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Svix, Webhook } from 'svix';
import { MemoryGuards } from '../../core/memory/guards';
import { MemoryHotState } from '../../core/memory/hot-state';
import { systemClock } from '../../core/ports/clock';
import { silentLogger } from '../../core/ports/logger';
import { createSecretBox } from '../../core/signing/secret-box';
import { startFleet, type Fleet } from '../../workers/node/fleet';
import { createHttpSender } from '../../workers/node/sender';
import { SqliteLog } from '../../workers/sqlite/log';
import { uniq, waitFor } from '../helpers/env';
import { testConfig, TEST_SECRETS_KEY } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Named hooks on howk-dev's embedded storage with API keys off (its default): the application
// must be named with ?app= (400 otherwise), a foreign web page is still refused, and the
// bytes reach the endpoint signed with its secret.

const config = testConfig('memory');

describe('named hooks on the embedded storage, keys off (howk-dev)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'howk-hooks-'));
  let rx: Receiver;
  let fleet: Fleet;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    rx = await startReceiver();
    const log = new SqliteLog({ path: join(dir, 'howk.db') });
    const sender = createHttpSender({ connectionsPerOrigin: 4, snippetBytes: 1024, allowedNetworks: config.delivery.allowed_networks });
    const hot = new MemoryHotState({ status_ttl: config.ttl.status_ttl, stats_ttl: config.ttl.stats_ttl, retry_data_ttl: config.ttl.retry_data_ttl }, systemClock);
    const secretBox = await createSecretBox('k1', { k1: TEST_SECRETS_KEY });
    fleet = await startFleet({ config, logStore: log, hot, sender, log: silentLogger, secretBox, guards: new MemoryGuards() });
    await fleet.apps!.ready;
    stop = async () => {
      await fleet.stop();
      await sender.close();
      await hot.close();
      await log.close();
    };
  });
  afterAll(async () => {
    await stop?.();
    await rx?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('?app= is required without a bound key; a foreign page gets 403; the hook is delivered, signed, and listed', async () => {
    const tag = uniq('emb');
    const svix = new Svix('any', { serverUrl: fleet.baseUrl! });
    const app = await svix.application.create({ name: tag, uid: tag });
    const ep = await svix.endpoint.create(app.id, { url: rx.url(`/${tag}`), uid: 'orders' });
    const secret = (await svix.endpoint.getSecret(app.id, ep.id)).key;
    const post = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${fleet.baseUrl}${path}`, { method: 'POST', body: '{"order": 7}', headers: { 'content-type': 'application/json', ...headers } });

    const noApp = await post('/hooks/orders');
    expect(noApp.status).toBe(400);
    expect(((await noApp.json()) as any).error).toMatchObject({ field: 'app', message: expect.stringContaining('API keys are off') });
    const csrf = await post(`/hooks/orders?app=${tag}`, { origin: 'http://evil.example' });
    expect(csrf.status).toBe(403);

    const ok = await post(`/hooks/orders?app=${tag}`);
    expect(ok.status).toBe(202);
    const { id, position } = (await ok.json()) as any;
    expect(position).toEqual(expect.any(Number));
    const r = await waitFor(() => rx.received.find((x) => x.path === `/${tag}`));
    const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
    expect(new Webhook(secret).verify(r.body, headers)).toEqual({ order: 7 });
    expect(rx.received.filter((x) => x.path === `/${tag}`)).toHaveLength(1);
    const s = await waitFor(async () => {
      const v = (await (await fetch(`${fleet.baseUrl}${ok.headers.get('location')}`)).json()) as any;
      return v.state === 'delivered' ? v : undefined;
    });
    expect(s).toMatchObject({ webhook_id: id, attempts: 1 });
    const list = (await (await fetch(`${fleet.baseUrl}/hooks/orders/deliveries?app=${tag}`)).json()) as any;
    expect(list.items.map((x: any) => [x.webhook_id, x.state])).toEqual([[id, 'delivered']]);
  });
});
