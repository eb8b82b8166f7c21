import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// A key bound to config A on the listing, retry and dead-letter routes (embedded fleet,
// real HTTP on loopback): it works on A's webhooks and dead letters, and an attacker holding
// it learns nothing of config B's and changes nothing there. Another config's webhook or dead
// letter named by id answers 404, as GET /webhooks/:id/status does; a listing that names
// another config answers 403.
describe('a key bound to one config on listings, retry and replay', () => {
  let rx: Receiver;
  let f: TestFleet;
  let keyA: string;
  let admin: string;
  const dead: Record<'a1' | 'a2' | 'b', string> = { a1: '', a2: '', b: '' };

  const call = (method: string, path: string, key: string, body?: unknown) =>
    fetch(f.baseUrl + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });
  const pendingOf = (config: string) => f.records('pending').filter((r) => JSON.parse(r.value!).config_id === config).length;

  beforeAll(async () => {
    // Every delivery is refused with 400: one attempt, then a dead letter.
    rx = await startReceiver(() => ({ status: 400, body: 'no' }));
    f = await startTestFleet('memory', { overrides: { 'api.auth.enabled': true, 'circuit_breaker.enabled': false } });
    await f.fleet.security!.ready;
    keyA = (await f.fleet.security!.keys!.create({ name: 'tenant-a', scopes: ['admin'], config_ids: ['cfg-a'] })).key;
    admin = (await f.fleet.security!.keys!.create({ name: 'operator', scopes: ['admin'] })).key;
    for (const [name, config] of [
      ['a1', 'cfg-a'],
      ['a2', 'cfg-a'],
      ['b', 'cfg-b'],
    ] as const) {
      const res = await call('POST', `/webhooks/${config}/enqueue`, admin, { endpoint: rx.url(`/${name}`), payload: { name } });
      expect(res.status).toBe(202);
      dead[name] = ((await res.json()) as any).webhook_id;
    }
    for (const id of Object.values(dead)) await waitFor(async () => (await call('GET', `/deadletter/${id}`, admin)).status === 200, { what: `dead letter of ${id}` });
  });

  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  it("lists its own config's webhooks and dead letters", async () => {
    const hooks = await json(await call('GET', '/webhooks?config_id=cfg-a', keyA));
    expect(hooks.status).toBe(200);
    expect(hooks.body.items.map((s: any) => s.webhook_id).sort()).toEqual([dead.a1, dead.a2].sort());
    const letters = await json(await call('GET', '/deadletter?config_id=cfg-a', keyA));
    expect(letters.status).toBe(200);
    expect(letters.body.items.map((d: any) => d.webhook_id).sort()).toEqual([dead.a1, dead.a2].sort());
    const one = await json(await call('GET', `/deadletter/${dead.a1}`, keyA));
    expect(one).toMatchObject({ status: 200, body: { webhook_id: dead.a1, config_id: 'cfg-a', webhook: { payload: { name: 'a1' } } } });
  });

  it('retries its own webhook and replays its own dead letter', async () => {
    const before = pendingOf('cfg-a');
    const retried = await json(await call('POST', `/webhooks/${dead.a1}/retry`, keyA));
    expect(retried).toMatchObject({ status: 202, body: { webhook_id: dead.a1, status: 'pending', attempt: 2 } });
    const replayed = await json(await call('POST', `/deadletter/${dead.a2}/replay`, keyA));
    expect(replayed).toMatchObject({ status: 202, body: { status: 'pending', replay_of: dead.a2 } });
    await waitFor(async () => pendingOf('cfg-a') === before + 2, { what: 'retry and replay produced' });
  });

  it("gets 403 on config B's listings and 404 on B's webhook and dead letter; nothing of B is produced", async () => {
    const before = pendingOf('cfg-b');
    for (const path of ['/webhooks?config_id=cfg-b', '/deadletter?config_id=cfg-b', '/webhooks', '/deadletter']) {
      const res = await json(await call('GET', path, keyA));
      expect(res.status, path).toBe(403);
      expect(res.body.error.code, path).toBe('forbidden');
      expect(JSON.stringify(res.body), path).not.toContain(dead.b);
    }
    const read = await json(await call('GET', `/deadletter/${dead.b}`, keyA));
    expect(read).toEqual({ status: 404, body: { error: { code: 'not_found', message: expect.any(String) } } });
    expect(JSON.stringify(read.body)).not.toContain('cfg-b');
    for (const path of [`/webhooks/${dead.b}/retry`, `/deadletter/${dead.b}/replay`]) {
      const res = await json(await call('POST', path, keyA));
      expect(res.status, path).toBe(404);
      expect(res.body.error.code, path).toBe('not_found');
    }
    expect((await call('GET', `/webhooks/${dead.b}/status`, keyA)).status).toBe(404);
    // A second config_id cannot smuggle B past the check: the listing reads the one that was checked.
    const twice = await json(await call('GET', '/webhooks?config_id=cfg-a&config_id=cfg-b', keyA));
    expect(twice.status).toBe(200);
    expect(twice.body.items.every((s: any) => s.config_id === 'cfg-a')).toBe(true);
    expect(await json(await call('GET', '/webhooks?config_id=cfg-b&config_id=cfg-a', keyA))).toMatchObject({ status: 403 });
    // What the operator sees of B is untouched.
    expect(pendingOf('cfg-b')).toBe(before);
    const b = await json(await call('GET', `/webhooks/${dead.b}/status`, admin));
    expect(b.body).toMatchObject({ state: 'failed', attempts: 1 });
  });
});
