import { request } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestFleet, type TestFleet } from '../helpers/fleet';

// What a web page the operator visits can make a browser send to the API: a "simple" POST
// (text/plain, a form) with no preflight, a foreign Origin, a DNS-rebound Host. Each is
// refused before anything is done; what curl, SDKs and the console send passes. On the api's
// real Node server (in-memory adapters).

const item = { endpoint: 'http://127.0.0.1:9/hook', payload: { a: 1 } };

/** A request with any Host (fetch does not let a caller set it). */
const raw = (base: string, path: string, host: string, method = 'GET'): Promise<{ status: number; json: any }> =>
  new Promise((resolve, reject) => {
    const u = new URL(base + path);
    const req = request({ host: u.hostname, port: u.port, path, method, headers: { host } }, (res) => {
      let text = '';
      res.on('data', (b) => (text += b));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    req.end();
  });

describe('cross-site requests (api on its Node server)', () => {
  let f: TestFleet;
  let pinned: TestFleet;
  beforeAll(async () => {
    f = await startTestFleet('memory', {
      roles: { api: true, worker: false, scheduler: false },
      overrides: {
        'api.allowed_origins': ['https://console.example.com'],
        'transformer.script_dirs': [join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'transformers')],
      },
    });
    pinned = await startTestFleet('memory', {
      roles: { api: true, worker: false, scheduler: false },
      overrides: { 'api.allowed_hosts': ['localhost', 'admin.example.com:8443', 'api.example.com'] },
    });
  });
  afterAll(async () => {
    await f?.stop();
    await pinned?.stop();
  });

  const pending = () => f.records('pending').length;
  const send = (path: string, body: string | undefined, headers: Record<string, string>, method = 'POST') => fetch(f.baseUrl + path, { method, headers, body });

  it.each([
    ['text/plain;charset=UTF-8', 'a fetch() of a string, a no-cors request'],
    ['application/x-www-form-urlencoded', 'an HTML form, curl -d'],
    ['multipart/form-data; boundary=x', 'a multipart form'],
  ])('a JSON body sent as %s (%s) is a 415 naming application/json; nothing is enqueued', async (type) => {
    const before = pending();
    for (const path of ['/webhooks/csrf/enqueue', '/webhooks/csrf/enqueue/batch']) {
      const body = path.endsWith('batch') ? { webhooks: [item] } : item;
      const r = await send(path, JSON.stringify(body), { 'content-type': type });
      expect(r.status, path).toBe(415);
      const e = (await r.json()) as { error: { code: string; message: string } };
      expect(e.error.code).toBe('unsupported_media_type');
      expect(e.error.message).toContain('application/json');
    }
    expect(pending()).toBe(before);
  });

  it('admin JSON routes take application/json only; a route whose body is optional takes a request without one', async () => {
    const keys = await send('/keys', JSON.stringify({ name: 'csrf', scopes: ['admin'] }), { 'content-type': 'text/plain' });
    expect(keys.status).toBe(415);
    const none = await send('/keys', JSON.stringify({ name: 'csrf', scopes: ['admin'] }), {});
    expect(none.status).toBe(415);
    expect(f.fleet.security!.keys!.list().some((k) => k.name === 'csrf')).toBe(false);
    // No body, no type: the route runs (the webhook is unknown).
    expect((await send('/webhooks/wh_unknown/retry', undefined, {})).status).toBe(404);
    expect((await send('/webhooks/wh_unknown/retry', '{"max_attempts":3}', { 'content-type': 'text/plain' })).status).toBe(415);
    // application/json reaches the route itself, which refuses to mint a key while API keys are off.
    const ok = await send('/keys', JSON.stringify({ name: 'json', scopes: ['read'] }), { 'content-type': 'application/json; charset=utf-8' });
    expect(ok.status).toBe(409);
    expect(((await ok.json()) as { error: { code: string } }).error.code).toBe('auth_disabled');
  });

  it('application/json with parameters and application/*+json are JSON', async () => {
    const before = pending();
    expect((await send('/webhooks/csrf/enqueue', JSON.stringify(item), { 'content-type': 'Application/JSON; charset=utf-8' })).status).toBe(202);
    expect((await send('/webhooks/csrf/enqueue', JSON.stringify(item), { 'content-type': 'application/vnd.howk+json' })).status).toBe(202);
    expect(pending()).toBe(before + 2);
  });

  it.each<[Record<string, string>, string]>([
    [{ origin: 'https://evil.example' }, 'a foreign Origin'],
    [{ origin: 'null' }, 'an opaque origin (sandboxed frame, file:)'],
    [{ 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }, 'Sec-Fetch-Site cross-site'],
    [{ 'sec-fetch-site': 'same-site' }, 'Sec-Fetch-Site same-site (localhost:3000 to localhost:8080)'],
  ])('%j (%s) is a 403 cross_origin_refused on a state-changing route; nothing is enqueued', async (headers, _why) => {
    const before = pending();
    const r = await send('/webhooks/csrf/enqueue', JSON.stringify(item), { 'content-type': 'application/json', ...headers });
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('cross_origin_refused');
    const revoke = await send('/keys/0123456789abcdef', undefined, headers, 'DELETE');
    expect(revoke.status).toBe(403);
    expect(pending()).toBe(before);
  });

  it('same-origin, an allowed origin, and no Origin at all (curl, SDKs, servers) pass; reads pass whatever the origin', async () => {
    const before = pending();
    const own = new URL(f.baseUrl).origin;
    const passing: Record<string, string>[] = [
      {},
      { origin: own },
      { 'sec-fetch-site': 'same-origin', origin: own },
      { 'sec-fetch-site': 'none' },
      { origin: 'https://console.example.com' },
    ];
    for (const headers of passing) {
      const r = await send('/webhooks/csrf/enqueue', JSON.stringify(item), { 'content-type': 'application/json', ...headers });
      expect(r.status, JSON.stringify(headers)).toBe(202);
    }
    expect(pending()).toBe(before + 5);
    expect((await fetch(`${f.baseUrl}/stats`, { headers: { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' } })).status).toBe(200);
  });

  it('/incoming/:name: a provider (no Origin) posts any type; a browser page of another site is refused and nothing is enqueued', async () => {
    const before = pending();
    const order = JSON.stringify({ status: 'paid', id: 1 });
    const browsers: Record<string, string>[] = [{ origin: 'https://evil.example' }, { 'sec-fetch-site': 'cross-site' }];
    for (const headers of browsers) {
      const r = await send('/incoming/filter', order, { 'content-type': 'text/plain', ...headers });
      expect(r.status, JSON.stringify(headers)).toBe(403);
    }
    expect(pending()).toBe(before);
    const provider = await send('/incoming/filter', order, { 'content-type': 'text/plain' });
    expect(provider.status).toBe(200);
    expect(pending()).toBe(before + 1);
  });

  it('api.allowed_hosts: another Host (a DNS-rebound name) is a 421 on every route; listed names pass, on any port unless one is given; addresses pass', async () => {
    const port = new URL(pinned.baseUrl).port;
    for (const host of [
      `rebind.attacker.example:${port}`,
      `localhost.attacker.example:${port}`,
      `api.example.com.evil:${port}`,
      '127.0.0.1.nip.io',
      'admin.example.com:9000',
      'admin.example.com',
    ]) {
      const r = await raw(pinned.baseUrl, '/stats', host);
      expect(r.status, host).toBe(421);
      expect(r.json.error.code).toBe('host_not_allowed');
    }
    expect((await raw(pinned.baseUrl, '/webhooks/h/enqueue', 'rebind.attacker.example', 'POST')).status).toBe(421);
    for (const host of [
      `localhost:${port}`,
      'LOCALHOST',
      'api.example.com',
      `api.example.com.:${port}`,
      'admin.example.com:8443',
      `127.0.0.1:${port}`,
      `10.1.2.3:${port}`,
      `[::1]:${port}`,
    ]) {
      expect((await raw(pinned.baseUrl, '/stats', host)).status, host).toBe(200);
    }
    // Empty (the default): any Host.
    expect((await raw(f.baseUrl, '/stats', 'anything.example')).status).toBe(200);
  });

  it('every API answer says nosniff and no-store: accepted, refused, health', async () => {
    const answers = [
      await send('/webhooks/csrf/enqueue', JSON.stringify(item), { 'content-type': 'application/json' }),
      await send('/webhooks/csrf/enqueue', JSON.stringify(item), { 'content-type': 'text/plain' }),
      await fetch(`${f.baseUrl}/webhooks/wh_nope/status`),
      await fetch(`${f.baseUrl}/health`),
      await fetch(`${f.baseUrl}/openapi.json`),
    ];
    for (const r of answers) {
      expect(r.headers.get('x-content-type-options'), r.url).toBe('nosniff');
      expect(r.headers.get('cache-control'), r.url).toBe('no-store');
    }
  });
});
