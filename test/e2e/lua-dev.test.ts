import bcrypt from 'bcryptjs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encryptCredential, importCredentialKey } from '../../core/lua';
import { waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';
import { startReceiver, type Receiver } from '../helpers/receiver';

// The howk-dev binary as its own process, configured only through HOWK_* variables: a
// --scripts-dir transformer behind a bcrypt passwd file calls a local enrichment server
// (lua.http_allowlist from JSON in the environment), decrypts a credential
// (HOWK_LUA_CRYPTO_*), and its webhook carries a ${VAR} header template that the worker
// resolves from an allow-listed variable. Loopback only; no Kafka or Redis.

const TOKEN = `dev-token-${Math.random().toString(36).slice(2)}`;
const CREDENTIAL = `dev-credential-${Math.random().toString(36).slice(2)}`;

describe('howk-dev wires http, credentials, secret templates and bcrypt (process)', () => {
  let dev: Proc;
  let rx: Receiver;
  let enrichment: Server;
  let dir: string;
  let base: string;
  beforeAll(async () => {
    enrichment = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ tier: req.url === '/customers/42' ? 'gold' : 'basic' }));
    });
    await new Promise<void>((r) => enrichment.listen(0, '127.0.0.1', r));
    const enrichUrl = `http://127.0.0.1:${(enrichment.address() as AddressInfo).port}`;
    rx = await startReceiver();
    const keyB64 = Buffer.alloc(32, 0x5a).toString('base64');
    const envelope = await encryptCredential('D1', await importCredentialKey('D1', keyB64), 'crm', CREDENTIAL, { namespaces: ['incoming:enrich'], hosts: ['127.0.0.1'] });
    dir = await mkdtemp(join(tmpdir(), 'howk-dev-lua-'));
    await writeFile(
      join(dir, 'enrich.lua'),
      `local p = request.payload
       local r = assert(http.get('${enrichUrl}/customers/' .. p.customer_id))
       local cred = assert(crypto.decrypt_credential('crm'))
       assert(howk.post(p.deliver_to, { customer_id = p.customer_id, tier = json.decode(r.body).tier, credential_ok = (cred == '${CREDENTIAL}') }))`,
    );
    await writeFile(join(dir, 'enrich.json'), JSON.stringify({ _delivery_headers: { Authorization: 'Bearer ${DEV_PARTNER_TOKEN}' } }));
    await writeFile(join(dir, 'enrich.passwd'), `ops:${bcrypt.hashSync('dev-pass', 8)}\n`);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    dev = spawnRole(
      'dev',
      {
        HOWK_API_PORT: String(port),
        HOWK_API_HOST: '127.0.0.1',
        HOWK_LUA_HTTP_ALLOWLIST: JSON.stringify({ 'incoming:enrich': ['127.0.0.1'] }),
        HOWK_LUA_CREDENTIALS: JSON.stringify({ crm: envelope }),
        HOWK_LUA_CRYPTO_D1: keyB64,
        HOWK_LUA_SECRET_ENV_ALLOWLIST: 'DEV_PARTNER_TOKEN',
        HOWK_LUA_SECRET_ENV_HOSTS: JSON.stringify({ DEV_PARTNER_TOKEN: ['127.0.0.1'] }),
        DEV_PARTNER_TOKEN: TOKEN,
        HOWK_LOG_LEVEL: 'debug',
      },
      ['--scripts-dir', dir, '--memory'],
    );
    await waitFor(async () => (await fetch(`${base}/ready`).catch(() => undefined))?.status === 200, { timeoutMs: 60_000, what: `howk-dev ready\n${dev.output()}` });
  });
  afterAll(async () => {
    if (dev) await stopProc(dev);
    await rx?.close();
    await new Promise<void>((r) => (enrichment ? enrichment.close(() => r()) : r()));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('delivers the enriched webhook with the resolved header; the token never shows in its output', async () => {
    const auth = { authorization: `Basic ${Buffer.from('ops:dev-pass').toString('base64')}`, 'content-type': 'application/json' };
    const denied = await fetch(`${base}/incoming/enrich`, {
      method: 'POST',
      headers: { ...auth, authorization: `Basic ${Buffer.from('ops:nope').toString('base64')}` },
      body: '{}',
    });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('www-authenticate')).toMatch(/^Basic/);
    const res = await fetch(`${base}/incoming/enrich`, { method: 'POST', headers: auth, body: JSON.stringify({ customer_id: '42', deliver_to: rx.url('/dev-enriched') }) });
    expect(res.status, dev.output()).toBe(200);
    const got = await waitFor(() => rx.received.find((r) => r.path === '/dev-enriched'), { what: 'delivery from howk-dev' });
    expect(JSON.parse(got.body.toString())).toEqual({ customer_id: '42', tier: 'gold', credential_ok: true });
    expect(got.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(dev.output()).toContain('howk-dev ready');
    expect(dev.output()).not.toContain(TOKEN);
    expect(dev.output()).not.toContain(CREDENTIAL);
  });
});
