import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { createApiApp } from '../../core/http/app';
import { accessMatcher } from '../../core/http/access';
import { buildOpenApi } from '../../core/http/openapi';
import { ROUTES as TABLE } from '../../core/http/route-table';
import { silentLogger } from '../../core/ports/logger';
import { hashToken, KeyTable, tokenId } from '../../core/security/api-keys';
import { take } from '../../core/security/rate-limit';
import { startTestFleet, type TestFleet } from '../helpers/fleet';

const routeAccess = accessMatcher(TABLE);

// API keys on a whole api (embedded log, real HTTP on loopback). "Nothing enqueued" is
// read from the log itself.
describe('API keys and scopes', () => {
  let f: TestFleet;
  const keys: Record<string, string> = {};
  const ids: Record<string, string> = {};
  const ep = 'http://127.0.0.1:9/never';

  beforeAll(async () => {
    f = await startTestFleet('memory', { roles: { api: true, worker: false, scheduler: false }, overrides: { 'api.auth.enabled': true } });
    await f.fleet.security!.ready;
    const make = async (name: string, scopes: ('enqueue' | 'read' | 'admin')[], config_ids?: string[]) => {
      const k = await f.fleet.security!.keys!.create({ name, scopes, config_ids });
      keys[name] = k.key;
      ids[name] = k.id;
    };
    await make('admin', ['admin']);
    for (const n of ['admin2', 'admin3', 'admin4']) await make(n, ['admin']);
    await make('enqueue', ['enqueue']);
    await make('read', ['read']);
    await make('bound', ['enqueue', 'read'], ['cfg-a']);
    await make('bound-admin', ['admin'], ['cfg-a']);
  });
  afterAll(() => f?.stop());

  const call = (method: string, path: string, key?: string, body?: unknown) =>
    fetch(f.baseUrl + path, {
      method,
      headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  // Every route of the API (documented ones, the endpoint admin routes, and an unknown path).
  const ROUTES: [string, string, unknown?][] = [
    ...Object.entries(buildOpenApi(f0(), TABLE).paths as Record<string, Record<string, unknown>>).flatMap(([p, ms]) =>
      Object.keys(ms).map((m) => [m.toUpperCase(), p.replace('{config}', 'cfg-b').replace('{id}', 'wh_x').replace('{hash}', 'abc')] as [string, string]),
    ),
    ['GET', '/endpoints/abc'],
    ['POST', '/endpoints/abc/pause'],
    ['POST', '/endpoints/abc/resume'],
    ['POST', '/endpoints/abc/circuit/reset'],
    ['POST', '/configs/cfg-b/pause'],
    ['POST', '/configs/cfg-b/resume'],
    ['GET', '/no/such/route'],
    ['DELETE', '/webhooks/wh_x'],
  ];
  function f0() {
    return loadConfig({ env: {} });
  }
  const OPEN = new Set(['/health', '/ready', '/health/dependencies', '/openapi.json']);
  const bodyFor = (path: string) =>
    path.includes('enqueue/batch')
      ? { webhooks: [{ endpoint: ep, payload: 1 }] }
      : path.includes('enqueue')
        ? { endpoint: ep, payload: 1 }
        : path === '/keys'
          ? { scopes: ['read'] }
          : path.endsWith('/secret')
            ? { secret: 'whsec_' + 'A'.repeat(32) }
            : undefined;

  it('answers 401 on every non-health route without a key or with a bad one, and 403 without the scope; nothing is enqueued', async () => {
    // /incoming/:name is open to API keys by design: it has its own per-script Basic auth.
    const guarded = ROUTES.filter(([m, p]) => !OPEN.has(p) && routeAccess(m, p).kind !== 'open');
    expect(guarded.length).toBeGreaterThanOrEqual(18);
    for (const [m, p] of guarded) {
      const body = m === 'GET' || m === 'DELETE' ? undefined : bodyFor(p);
      const none = await call(m, p, undefined, body);
      expect(none.status, `${m} ${p} without key`).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(((await none.json()) as any).error.code).toBe('unauthorized');
      for (const bad of ['howk_0000000000000000_' + 'A'.repeat(43), keys.admin!.slice(0, -1) + (keys.admin!.endsWith('A') ? 'B' : 'A'), 'nonsense']) {
        expect((await call(m, p, bad, body)).status, `${m} ${p} bad key`).toBe(401);
      }
      // A scope that does not cover the route: read for writes, enqueue for reads.
      const wrong = routeAccess(m, p).kind === 'key' && (routeAccess(m, p) as { scope: string }).scope === 'read' ? keys.enqueue : keys.read;
      expect((await call(m, p, wrong, body)).status, `${m} ${p} wrong scope`).toBe(403);
    }
    expect(f.records('pending')).toHaveLength(0);
    for (const p of OPEN) expect((await call('GET', p)).status, p).toBe(200);
  });

  it('lets each scope do its own work: enqueue enqueues, read reads, admin does both', async () => {
    expect((await call('POST', '/webhooks/cfg-b/enqueue', keys.enqueue, { endpoint: ep, payload: { n: 1 } })).status).toBe(202);
    expect((await call('GET', '/stats', keys.enqueue)).status).toBe(403);
    expect((await call('GET', '/stats', keys.read)).status).toBe(200);
    expect((await call('POST', '/webhooks/cfg-b/enqueue', keys.read, { endpoint: ep, payload: { n: 2 } })).status).toBe(403);
    expect((await call('POST', '/webhooks/cfg-b/enqueue', keys.admin2, { endpoint: ep, payload: { n: 3 } })).status).toBe(202);
    expect((await call('GET', '/stats', keys.admin2)).status).toBe(200);
    expect(f.records('pending').map((r) => JSON.parse(r.value!).payload)).toEqual([{ n: 1 }, { n: 3 }]);
  });

  it('keeps a config-bound key to its configs', async () => {
    const a = await call('POST', '/webhooks/cfg-a/enqueue', keys.bound, { endpoint: ep, payload: { bound: 'a' } });
    expect(a.status).toBe(202);
    const { webhook_id } = (await a.json()) as any;
    expect((await call('POST', '/webhooks/cfg-b/enqueue', keys.bound, { endpoint: ep, payload: { bound: 'b' } })).status).toBe(403);
    expect((await call('GET', '/stats', keys.bound)).status).toBe(403);
    expect((await call('GET', `/webhooks/${webhook_id}/status`, keys.bound)).status).toBe(200);
    const other = (await (await call('POST', '/webhooks/cfg-b/enqueue', keys.admin2, { endpoint: ep, payload: { x: 1 } })).json()) as any;
    const hidden = await call('GET', `/webhooks/${other.webhook_id}/status`, keys.bound);
    expect(hidden.status).toBe(404);
    // A bound admin manages its config's secret, but no keys and no other config.
    expect((await call('PUT', '/configs/cfg-a/secret', keys['bound-admin'], { secret: 'whsec_' + 'B'.repeat(32) })).status).toBe(200);
    expect((await call('PUT', '/configs/cfg-b/secret', keys['bound-admin'], { secret: 'whsec_' + 'B'.repeat(32) })).status).toBe(403);
    expect((await call('POST', '/keys', keys['bound-admin'], { scopes: ['admin'] })).status).toBe(403);
    expect(
      f
        .records('pending')
        .map((r) => JSON.parse(r.value!).payload)
        .filter((p: any) => p.bound),
    ).toEqual([{ bound: 'a' }]);
  });

  it('refuses config_ids: [] with 400 naming the field: an empty list must not create a key that reaches every config', async () => {
    const before = ((await (await call('GET', '/keys', keys.admin4)).json()) as any).keys.length;
    const res = await call('POST', '/keys', keys.admin4, { scopes: ['enqueue'], config_ids: [] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'invalid_request', field: 'config_ids', message: expect.stringMatching(/config_ids is empty/) });
    expect(((await (await call('GET', '/keys', keys.admin4)).json()) as any).keys).toHaveLength(before);
    await expect(f.fleet.security!.keys!.create({ scopes: ['read'], config_ids: [] })).rejects.toMatchObject({ code: 'invalid_request', field: 'config_ids' });
  });

  it('stops a revoked key at once (same instance: the next request)', async () => {
    expect((await call('GET', '/stats', keys.admin3)).status).toBe(200);
    const res = await call('DELETE', `/keys/${ids.admin3}`, keys.admin4);
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).revoked_at).toEqual(expect.any(String));
    expect((await call('GET', '/stats', keys.admin3)).status).toBe(401);
    const listed = ((await (await call('GET', '/keys', keys.admin4)).json()) as any).keys;
    expect(listed.find((k: any) => k.id === ids.admin3).revoked_at).not.toBeNull();
    expect(JSON.stringify(listed)).not.toMatch(/howk_|"hash"/);
  });
});

describe('per-key rate limit (api.auth.rate_limit 1/s, rate_burst 5)', () => {
  let f: TestFleet;
  afterAll(() => f?.stop());
  it('passes the burst (just under the limit), answers the next with 429 + Retry-After (just over), per key', async () => {
    f = await startTestFleet('memory', {
      roles: { api: true, worker: false, scheduler: false },
      overrides: { 'api.auth.enabled': true, 'api.auth.rate_limit': 1, 'api.auth.rate_burst': 5 },
    });
    await f.fleet.security!.ready;
    const [a, b] = [await f.fleet.security!.keys!.create({ scopes: ['read'] }), await f.fleet.security!.keys!.create({ scopes: ['read'] })];
    const get = (k: string) => fetch(`${f.baseUrl}/stats`, { headers: { authorization: `Bearer ${k}` } });
    for (let i = 0; i < 5; i++) expect((await get(a.key)).status, `request ${i + 1}`).toBe(200);
    const over = await get(a.key);
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await over.json()) as any).error.code).toBe('rate_limited');
    expect((await get(b.key)).status).toBe(200);
  });
});

describe('auth building blocks', () => {
  it('fails closed with 503 while no key table is loaded', async () => {
    const config = loadConfig({ env: {} });
    const app = createApiApp({ config, enqueue: async () => [], hot: {} as never, log: silentLogger, dependencies: [], clock: { now: () => Date.now() } });
    expect((await app.request('/stats')).status).toBe(503);
    expect((await app.request('/health')).status).toBe(200);
  });

  it('verifies tokens by hash only, in constant shape', async () => {
    const t = new KeyTable();
    const token = 'howk_0123456789abcdef_' + 'x'.repeat(43);
    t.apply(
      '0123456789abcdef',
      JSON.stringify({ id: '0123456789abcdef', name: '', hash: await hashToken(token), scopes: ['read'], config_ids: null, created_at: 'x', revoked_at: null }),
    );
    expect(tokenId(token)).toBe('0123456789abcdef');
    expect((await t.verify(token))?.id).toBe('0123456789abcdef');
    expect(await t.verify(token.replace(/x$/, 'y'))).toBeNull();
    // A malformed record leaves the key as its last good record says (core/log/compacted-table.ts); a revocation ends it.
    expect(t.apply('0123456789abcdef', '{"id":"0123456789abcdef"}')).toBe('malformed');
    expect((await t.verify(token))?.id).toBe('0123456789abcdef');
    t.apply(
      '0123456789abcdef',
      JSON.stringify({ id: '0123456789abcdef', name: '', hash: await hashToken(token), scopes: ['read'], config_ids: null, created_at: 'x', revoked_at: 'y' }),
    );
    expect(await t.verify(token)).toBeNull();
  });

  it('token bucket: burst, refill at rate, wait time', () => {
    let b = take(undefined, 0, 2, 3).bucket;
    b = take(b, 0, 2, 3).bucket;
    const third = take(b, 0, 2, 3);
    expect(third.ok).toBe(true);
    const fourth = take(third.bucket, 0, 2, 3);
    expect(fourth).toMatchObject({ ok: false, waitMs: 500 });
    expect(take(fourth.bucket, 499, 2, 3).ok).toBe(false);
    expect(take(fourth.bucket, 500, 2, 3).ok).toBe(true);
  });

  it('maps routes to scopes, defaulting unknown writes to admin', () => {
    expect(routeAccess('POST', '/webhooks/a/enqueue')).toMatchObject({ scope: 'enqueue', params: { config: 'a' }, route: { config: { from: 'param', name: 'config' } } });
    expect(routeAccess('GET', '/webhooks/wh_1/status')).toMatchObject({ scope: 'read', params: { id: 'wh_1' }, route: { config: { from: 'owner', name: 'id' } } });
    expect(routeAccess('POST', '/configs/a%3Ab/pause')).toMatchObject({ scope: 'admin', params: { config: 'a:b' } });
    expect(routeAccess('GET', '/webhooks')).toMatchObject({ scope: 'read', route: { config: { from: 'query', name: 'config_id' } } });
    expect(routeAccess('HEAD', '/stats')).toMatchObject({ scope: 'read' });
    expect(routeAccess('GET', '/keys')).toMatchObject({ scope: 'admin' });
    expect(routeAccess('PATCH', '/anything/new')).toMatchObject({ scope: 'admin' });
    expect(routeAccess('GET', '/health')).toEqual({ kind: 'open' });
    expect(routeAccess('POST', '/health')).toMatchObject({ scope: 'admin' });
  });
});
