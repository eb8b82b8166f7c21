import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { encryptCredential, importCredentialKey, runDeliveryScript } from '../../core/lua';
import { createLogger } from '../../core/ports/logger';
import { nodeLuaServices } from '../../workers/node/lua-services';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// The Lua http module wired into howk-api (/incoming transformers, the script test route) and
// howk-worker (delivery scripts), on real Kafka + Redis (a db of its own). Every request goes to a local
// "enrichment" server on 127.0.0.1; the test config allow-lists loopback for the SSRF guard and
// 127.0.0.1 (not `localhost`) in lua.http_allowlist, so `localhost` plays the disallowed host.

type Seen = { method: string; url: string; headers: IncomingHttpHeaders; body: string };

// lua.timeout (the script's own CPU deadline, 500 ms by default) is lua-sandbox's to test; here
// a script beside other test lanes on the loaded 2 cores once passed it before its http calls.
const LUA_TIMEOUT_MS = 5000;

const CAP = 64 * 1024;

const startEnrichment = async () => {
  const seen: Seen[] = [];
  let port = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '/';
      seen.push({ method: req.method ?? '', url, headers: req.headers, body: Buffer.concat(chunks).toString() });
      const json = (status: number, v: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', 'x-served-by': 'enrichment' });
        res.end(JSON.stringify(v));
      };
      const m = /^\/customers\/(\w+)$/.exec(url);
      if (m) return json(200, { id: m[1], tier: m[1] === '42' ? 'gold' : 'basic', region: 'eu' });
      if (url === '/score' && req.method === 'POST') return json(201, { score: JSON.parse(Buffer.concat(chunks).toString()).amount > 100 ? 'high' : 'low' });
      if (url === '/redirect-out') {
        res.writeHead(302, { location: `http://localhost:${port}/customers/1` });
        return res.end();
      }
      if (url === '/redirect-in') {
        res.writeHead(301, { location: '/customers/7' });
        return res.end();
      }
      if (url === '/huge') return json(200, { pad: 'x'.repeat(CAP * 2) });
      if (url === '/huge-chunked') {
        // No Content-Length: the cap must hold while streaming.
        res.writeHead(200, { 'content-type': 'text/plain' });
        const piece = 'y'.repeat(16 * 1024);
        let sent = 0;
        const more = () => {
          if (sent >= 16 || res.destroyed) return res.end();
          sent++;
          res.write(piece, () => setImmediate(more));
        };
        return more();
      }
      if (url === '/slow') {
        const t = setTimeout(() => json(200, { late: true }), 4000);
        res.on('close', () => clearTimeout(t));
        return;
      }
      json(404, { error: 'no such path' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  return {
    seen,
    base: `http://127.0.0.1:${port}`,
    port,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
};

type Enrichment = Awaited<ReturnType<typeof startEnrichment>>;

describe('Lua http module in the fleet (kafka)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let en: Enrichment;
  let dir: string;
  beforeAll(async () => {
    en = await startEnrichment();
    rx = await startReceiver();
    dir = await mkdtemp(join(tmpdir(), 'howk-lua-http-'));
    // The "HTTP enrichment" pattern: look the customer up, post the enriched event.
    await writeFile(
      join(dir, 'enrich.lua'),
      `
      local p = request.payload
      local res, err = http.get(p.lookup .. '/customers/' .. p.customer_id, { headers = { ['X-Api'] = 'howk' } })
      if not res then error('enrichment failed: ' .. err) end
      if res.status ~= 200 then error('enrichment answered ' .. res.status) end
      local customer = json.decode(res.body)
      assert(howk.post(p.deliver_to, { event = p.event, customer_id = p.customer_id, tier = customer.tier, region = customer.region }))
      `,
    );
    const tryGet = `local r, err = http.get(request.payload.url); assert(howk.post(request.payload.deliver_to, { status = r and r.status or json.null, err = err or json.null }))`;
    await writeFile(join(dir, 'own-hosts.lua'), tryGet);
    await writeFile(join(dir, 'own-hosts.json'), JSON.stringify({ allowed_hosts: ['127.0.0.1'] }));
    await writeFile(join(dir, 'no-hosts.lua'), tryGet);
    f = await startTestFleet('kafka', {
      overrides: {
        'transformer.script_dirs': [dir],
        'lua.http_allowlist': { 'incoming:enrich': ['127.0.0.1'], probe: ['127.0.0.1'], 'wh-http': ['127.0.0.1'] },
        'lua.http_timeout': 2000,
        'lua.http_max_response_bytes': CAP,
        'lua.timeout': LUA_TIMEOUT_MS,
      },
    });
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    await en?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const probe = async (script: string, payload: unknown = {}) => {
    const res = await f.post('/config/probe/script/test', { payload, script });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(200);
    return body.request.headers as Record<string, string>;
  };

  it('HTTP enrichment: a transformer calls the local enrichment server and posts the enriched webhook', async () => {
    const res = await f.post('/incoming/enrich', { event: 'order.paid', customer_id: '42', lookup: en.base, deliver_to: rx.url('/enriched') });
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).count).toBe(1);
    const got = await waitFor(() => rx.received.find((r) => r.path === '/enriched'), { what: 'enriched delivery' });
    expect(JSON.parse(got.body.toString())).toEqual({ event: 'order.paid', customer_id: '42', tier: 'gold', region: 'eu' });
    const call = en.seen.find((s) => s.url === '/customers/42')!;
    expect(call.method).toBe('GET');
    expect(call.headers['x-api']).toBe('howk');
    // A lookup that fails fails the run: 422, nothing enqueued.
    const bad = await f.post('/incoming/enrich', { event: 'x', customer_id: 'nope!', lookup: en.base, deliver_to: rx.url('/enriched') });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as any).error.message).toMatch(/enrichment answered 404/);
  });

  it('refuses a disallowed host before sending anything', async () => {
    const before = en.seen.length;
    const h = await probe(`local r, err = http.get('http://localhost:${en.port}/customers/1'); request.headers['x-err'] = err; request.headers['x-r'] = tostring(r)`);
    expect(h['x-err']).toBe('host not allowed: localhost');
    expect(h['x-r']).toBe('nil');
    expect(en.seen.length).toBe(before);
  });

  it('follows a redirect to an allowed host and refuses one to a disallowed host', async () => {
    const h = await probe(`
      local r = assert(http.get('${en.base}/redirect-in'))
      request.headers['x-in'] = r.status .. ' ' .. json.decode(r.body).id
      local r2, err = http.get('${en.base}/redirect-out')
      request.headers['x-out'] = err`);
    expect(h['x-in']).toBe('200 7');
    expect(h['x-out']).toBe('host not allowed: localhost');
    // The disallowed hop was never requested.
    expect(en.seen.filter((s) => s.headers.host === `localhost:${en.port}`)).toHaveLength(0);
  });

  it('refuses an oversized response, declared or streamed', async () => {
    const h = await probe(`
      local _, e1 = http.get('${en.base}/huge')
      local _, e2 = http.get('${en.base}/huge-chunked')
      request.headers['x-e1'] = e1
      request.headers['x-e2'] = e2`);
    expect(h['x-e1']).toBe(`response body exceeds ${CAP} bytes`);
    expect(h['x-e2']).toBe(`response body exceeds ${CAP} bytes`);
  });

  it('times out: opts.timeout_ms lowers lua.http_timeout, which bounds every call', async () => {
    const h = await probe(`
      local _, e1 = http.get('${en.base}/slow', { timeout_ms = 300 })
      local _, e2 = http.get('${en.base}/slow', { timeout_ms = 60000 })
      request.headers['x-e1'] = e1
      request.headers['x-e2'] = e2`);
    expect(h['x-e1']).toBe('http timeout after 300 ms');
    expect(h['x-e2']).toBe('http timeout after 2000 ms');
  });

  it('runs in the worker: a delivery script posts to the enrichment server before each attempt', async () => {
    const script = `
      local r, err = http.post('${en.base}/score', { amount = request.payload.amount })
      request.headers['X-Score'] = r and json.decode(r.body).score or ('error: ' .. err)
      request.headers['X-Score-Status'] = r and r.status or 0`;
    const put = await fetch(`${f.baseUrl}/config/wh-http/script`, { method: 'PUT', body: script });
    expect(put.status).toBe(200);
    // Same script on a config whose namespace has no allowlist entry: every call is refused.
    expect((await fetch(`${f.baseUrl}/config/other/script`, { method: 'PUT', body: script })).status).toBe(200);
    // Scripts travel on howk.scripts: warm up until the worker runs both (a delivery carries X-Score-Status).
    for (const config of ['wh-http', 'other']) {
      let n = 0;
      await waitFor(
        async () => {
          const path = `/warm-${config}-${++n}`;
          expect((await f.post(`/webhooks/${config}/enqueue`, { endpoint: rx.url(path), payload: { amount: 1 } })).status).toBe(202);
          const got = await waitFor(() => rx.received.find((r) => r.path === path), { what: path });
          return got.headers['x-score-status'] !== undefined;
        },
        { what: `worker running the script of ${config}`, intervalMs: 200 },
      );
    }
    expect((await f.post('/webhooks/wh-http/enqueue', { endpoint: rx.url('/scored'), payload: { amount: 250 } })).status).toBe(202);
    expect((await f.post('/webhooks/other/enqueue', { endpoint: rx.url('/unscored'), payload: { amount: 250 } })).status).toBe(202);
    const scored = await waitFor(() => rx.received.find((r) => r.path === '/scored'), { what: 'scored delivery' });
    expect(scored.headers['x-score']).toBe('high');
    expect(scored.headers['x-score-status']).toBe('201');
    const scoreCall = en.seen.find((s) => s.url === '/score' && JSON.parse(s.body).amount === 250)!;
    expect(scoreCall.headers['content-type']).toBe('application/json');
    expect(JSON.parse(scoreCall.body)).toEqual({ amount: 250 });
    const unscored = await waitFor(() => rx.received.find((r) => r.path === '/unscored'), { what: 'unscored delivery' });
    expect(unscored.headers['x-score']).toBe('error: host not allowed: 127.0.0.1');
  });

  it("adds a transformer's own allowed_hosts (name.json) to its namespace's allowlist", async () => {
    expect((await f.post('/incoming/own-hosts', { url: `${en.base}/customers/5`, deliver_to: rx.url('/own') })).status).toBe(200);
    expect((await f.post('/incoming/no-hosts', { url: `${en.base}/customers/6`, deliver_to: rx.url('/none') })).status).toBe(200);
    const own = await waitFor(() => rx.received.find((r) => r.path === '/own'), { what: 'own-hosts delivery' });
    const none = await waitFor(() => rx.received.find((r) => r.path === '/none'), { what: 'no-hosts delivery' });
    expect(JSON.parse(own.body.toString())).toEqual({ status: 200, err: null });
    expect(JSON.parse(none.body.toString())).toEqual({ status: null, err: 'host not allowed: 127.0.0.1' });
    expect(en.seen.some((s) => s.url === '/customers/6')).toBe(false);
  });
});

describe('Lua host services (no fleet)', () => {
  it('warns at start-up about config that can never work, naming no secret', async () => {
    const lines: string[] = [];
    const nine = await encryptCredential('K9', await importCredentialKey('K9', Buffer.alloc(32, 9).toString('base64')), 'orphan', 'x', {
      namespaces: ['wh'],
      hosts: ['api.example.com'],
    });
    const config = loadConfig({
      env: {},
      overrides: {
        'lua.http_allowlist': { wh: ['https://api.example.com', 'api.example.com:8443', 'ok.example.com', '*.fine.example'] },
        'lua.credentials': { plain: 'not-an-envelope', orphan: nine, old: 'lcred:v1:K9:aaaa:bbbb' },
        'lua.secret_env_allowlist': ['HOWK_IT_NEVER_SET'],
      },
    });
    const lua = await nodeLuaServices(
      config,
      { HOWK_LUA_CRYPTO_K1: Buffer.alloc(32, 1).toString('base64') },
      createLogger('t', 'debug', (l) => lines.push(l)),
    );
    await lua.close();
    const warned = lines.map((l) => JSON.parse(l));
    expect(warned.filter((w) => w.msg.includes('http_allowlist')).map((w) => w.entry)).toEqual(['https://api.example.com', 'api.example.com:8443']);
    expect(warned.find((w) => w.credential === 'plain')?.msg).toMatch(/not an lcred:v2: envelope/);
    expect(warned.find((w) => w.credential === 'old')?.msg).toMatch(/unscoped lcred:v1 envelope: re-encrypt it/);
    expect(warned.find((w) => w.credential === 'orphan')?.msg).toMatch(/needs HOWK_LUA_CRYPTO_K9/);
    expect(warned.find((w) => w.variable === 'HOWK_IT_NEVER_SET' && w.msg.includes('not set'))?.msg).toMatch(/secret_missing/);
    expect(warned.find((w) => w.variable === 'HOWK_IT_NEVER_SET' && w.msg.includes('secret_env_hosts'))?.msg).toMatch(/secret_host_not_allowed/);
    expect(lines.join('\n')).not.toContain(Buffer.alloc(32, 1).toString('base64'));
  });
});

describe('Lua http behind the SSRF guard (no fleet)', () => {
  it('refuses an allow-listed name that resolves to an address outside delivery.allowed_networks', async () => {
    const en = await startEnrichment();
    // `localhost` is allowed by name, but loopback is not in delivery.allowed_networks here.
    const config = loadConfig({ env: {}, overrides: { 'delivery.allowed_networks': [], 'lua.http_allowlist': { wh: ['localhost', '127.0.0.1'] } } });
    const lua = await nodeLuaServices(config, {});
    try {
      const code = `
        local _, e1 = http.get('http://localhost:${en.port}/customers/1')
        local _, e2 = http.get('http://127.0.0.1:${en.port}/customers/1')
        request.headers['x-e1'] = e1
        request.headers['x-e2'] = e2`;
      const r = await runDeliveryScript(
        code,
        { payload: '{}', headers: {}, config_id: 'wh:7', attempt: 0 },
        {
          services: lua.forNamespace('wh:7'),
          limits: { timeoutMs: LUA_TIMEOUT_MS },
        },
      );
      expect(r.headers['x-e1']).toMatch(/^destination refused: localhost resolves only to refused addresses: .*loopback address, not in delivery\.allowed_networks/);
      expect(r.headers['x-e2']).toMatch(/^destination refused: 127\.0\.0\.1 is refused: loopback address/);
      expect(en.seen).toHaveLength(0);
    } finally {
      await lua.close();
      await en.close();
    }
  });
});
