import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestFleet, type TestFleet } from '../helpers/fleet';

// With API keys off, anyone may call POST /keys: a key made then would be a stranger's admin
// key the moment keys are turned on. The api refuses to make one (embedded log, real HTTP on
// loopback); the key table stays empty.

describe('POST /keys with API keys off', () => {
  let f: TestFleet;
  beforeAll(async () => {
    f = await startTestFleet('memory', { roles: { api: true, worker: false, scheduler: false }, overrides: { 'api.auth.enabled': false } });
    await f.fleet.security!.ready;
  });
  afterAll(() => f?.stop());

  const post = (body: unknown) => fetch(`${f.baseUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it.each([
    ['an admin key', { name: 'intruder', scopes: ['admin'] }],
    ['an enqueue key bound to a config', { scopes: ['enqueue'], config_ids: ['cfg-a'] }],
    ['an invalid body', { scopes: [] }],
  ])('answers 409 auth_disabled to %s and makes no key', async (_what, body) => {
    const res = await post(body);
    expect(res.status).toBe(409);
    const json = (await res.json()) as { error: { code: string; message: string } };
    expect(json.error.code).toBe('auth_disabled');
    expect(json.error.message).toMatch(/HOWK_API_AUTH_ENABLED=true/);
    expect(f.fleet.security!.keys!.list()).toEqual([]);
    expect(await (await fetch(`${f.baseUrl}/keys`)).json()).toEqual({ keys: [] });
  });
});
