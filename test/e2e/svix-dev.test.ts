import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Svix, Webhook } from 'svix';
import { waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver } from '../helpers/receiver';

// The official svix client against the howk-dev binary itself (its SQLite data folder, keys
// off as howk-dev runs by default): the filter picks the endpoint, the delivery verifies with
// that endpoint's secret. Loopback only; no Kafka or Redis.

describe('howk-dev speaks the Svix API (process)', () => {
  let dir: string | undefined;
  let dev: Proc | undefined;
  const rxReady = startReceiver();
  afterAll(async () => {
    if (dev) await stopProc(dev);
    await (await rxReady).close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates an application and endpoints, sends a message, and the matching endpoint verifies it with its own secret', async () => {
    const rx = await rxReady;
    dir = await mkdtemp(join(tmpdir(), 'howk-svix-dev-'));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    dev = spawnRole('dev', { HOWK_API_PORT: String(port), HOWK_API_HOST: '127.0.0.1', HOWK_LOG_LEVEL: 'warn' }, ['--data', dir]);
    const p = dev;
    await waitFor(async () => (await fetch(`${base}/ready`).catch(() => undefined))?.status === 200, { timeoutMs: 60_000, intervalMs: 100, what: `howk-dev ready\n${p.output()}` });

    const svix = new Svix('dev', { serverUrl: base });
    const app = await waitFor(() => svix.application.create({ name: 'Local', uid: 'local' }).catch(() => undefined), { what: 'the model loaded' });
    const paid = await svix.endpoint.create('local', { url: rx.url('/paid'), filterTypes: ['invoice.paid'] });
    await svix.endpoint.create('local', { url: rx.url('/users'), filterTypes: ['user.created'] });
    const msg = await svix.message.create('local', { eventType: 'invoice.paid', eventId: 'e1', payload: { amount: 7 } });
    const [r] = await waitFor(() => (rx.received.length ? rx.received : undefined), { what: `the delivery\n${p.output()}` });
    expect(r!.path).toBe('/paid');
    const { key } = await svix.endpoint.getSecret(app.id, paid.id);
    expect(new Webhook(key).verify(r!.body.toString(), Object.fromEntries(Object.entries(r!.headers).map(([k, v]) => [k, String(v)])))).toEqual({ amount: 7 });
    expect((await svix.message.get('local', msg.id)).eventId).toBe('e1');
    await new Promise((res) => setTimeout(res, 300));
    expect(rx.received.map((x) => x.path)).toEqual(['/paid']);
  });
});
