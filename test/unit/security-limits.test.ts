import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/config/load';
import { createApiApp } from '../../core/http/app';
import { MAX_ADMIN_BODY } from '../../core/http/json-body';
import { silentLogger } from '../../core/ports/logger';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { postRaw } from '../helpers/receiver';

// Every input limit, once just under (accepted) and once just over (refused, nothing enqueued).
describe('input limits: just under passes, just over is refused', () => {
  let f: TestFleet;
  const L = { max_request_size: 2048, max_batch_size: 3, max_endpoint_length: 64, max_headers: 2, max_header_value_length: 16, max_idempotency_key_length: 8 };
  beforeAll(async () => {
    f = await startTestFleet('memory', {
      roles: { api: true, worker: false, scheduler: false },
      overrides: Object.fromEntries(Object.entries(L).map(([k, v]) => [`api.${k}`, v])),
    });
  });
  afterAll(() => f?.stop());

  const ep = (len: number) => {
    const base = 'http://127.0.0.1:9/';
    return base + 'p'.repeat(len - base.length);
  };
  const enqueue = async (body: unknown, cfg = 'lim') => postRaw(`${f.baseUrl}/webhooks/${cfg}/enqueue`, typeof body === 'string' ? body : JSON.stringify(body));
  const pendingCount = () => f.records('pending').length;

  const pair = async (name: string, under: () => Promise<{ status: number; json: any }>, over: () => Promise<{ status: number; json: any }>, overStatus = 400, field?: RegExp) => {
    const before = pendingCount();
    const u = await under();
    expect(u.status, `${name}: just under`).toBeLessThan(300);
    expect(pendingCount(), `${name}: just under enqueued`).toBe(before + (u.json?.count ?? 1));
    const o = await over();
    expect(o.status, `${name}: just over`).toBe(overStatus);
    if (field) expect(`${o.json.error.field} ${o.json.error.message}`, name).toMatch(field);
    expect(pendingCount(), `${name}: just over enqueued nothing`).toBe(before + (u.json?.count ?? 1));
  };

  it('api.max_request_size holds for a chunked body too (no Content-Length to trust)', async () => {
    const { request } = await import('node:http');
    const chunked = (size: number) =>
      new Promise<{ status: number; json: any }>((resolve, reject) => {
        const u = new URL(`${f.baseUrl}/webhooks/lim/enqueue`);
        const req = request(
          { host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
          (res) => {
            let text = '';
            res.on('data', (b) => (text += b));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : null }));
          },
        );
        req.on('error', reject);
        const head = `{"endpoint":"${ep(30)}","payload":"`;
        const body = `${head}${'x'.repeat(size - head.length - 2)}"}`;
        // In several chunks, as a streaming client sends it.
        for (let i = 0; i < body.length; i += 500) req.write(body.slice(i, i + 500));
        req.end();
      });
    await pair(
      'chunked body size',
      () => chunked(2048),
      () => chunked(2049),
      413,
    );
  });

  it('api.max_request_size (413)', async () => {
    const exact = (size: number) => {
      const head = `{"endpoint":"${ep(30)}","payload":"`;
      return `${head}${'x'.repeat(size - head.length - 2)}"}`;
    };
    expect(exact(2048)).toHaveLength(2048);
    await pair(
      'body size',
      () => enqueue(exact(2048)),
      () => enqueue(exact(2049)),
      413,
    );
  });

  it('api.max_batch_size', async () => {
    const batch = (n: number) =>
      postRaw(`${f.baseUrl}/webhooks/lim/enqueue/batch`, JSON.stringify({ webhooks: Array.from({ length: n }, (_, i) => ({ endpoint: ep(30), payload: i })) }));
    await pair(
      'batch size',
      () => batch(3),
      () => batch(4),
      400,
      /webhooks/,
    );
  });

  it('api.max_endpoint_length', async () => {
    await pair(
      'endpoint length',
      () => enqueue({ endpoint: ep(64), payload: 1 }),
      () => enqueue({ endpoint: ep(65), payload: 1 }),
      400,
      /endpoint/,
    );
  });

  it('api.max_headers and api.max_header_value_length (custom headers of a webhook)', async () => {
    await pair(
      'header count',
      () => enqueue({ endpoint: ep(30), payload: 1, headers: { a: '1', b: '2' } }),
      () => enqueue({ endpoint: ep(30), payload: 1, headers: { a: '1', b: '2', c: '3' } }),
      400,
      /headers/,
    );
    await pair(
      'header value',
      () => enqueue({ endpoint: ep(30), payload: 1, headers: { a: 'v'.repeat(16) } }),
      () => enqueue({ endpoint: ep(30), payload: 1, headers: { a: 'v'.repeat(17) } }),
      400,
      /headers/,
    );
  });

  it('api.max_idempotency_key_length', async () => {
    await pair(
      'idempotency key',
      () => enqueue({ endpoint: ep(30), payload: 1, idempotency_key: 'k'.repeat(8) }),
      () => enqueue({ endpoint: ep(30), payload: 1, idempotency_key: 'k'.repeat(9) }),
      400,
      /idempotency_key/,
    );
  });

  it('config id length (128)', async () => {
    await pair(
      'config id',
      () => enqueue({ endpoint: ep(30), payload: 1 }, 'c'.repeat(128)),
      () => enqueue({ endpoint: ep(30), payload: 1 }, 'c'.repeat(129)),
      400,
      /config/,
    );
  });

  it('signing_secret length (8..512) and max_attempts (1..1000)', async () => {
    await pair(
      'secret min',
      () => enqueue({ endpoint: ep(30), payload: 1, signing_secret: 's'.repeat(8) }),
      () => enqueue({ endpoint: ep(30), payload: 1, signing_secret: 's'.repeat(7) }),
      400,
      /signing_secret/,
    );
    await pair(
      'secret max',
      () => enqueue({ endpoint: ep(30), payload: 1, signing_secret: 's'.repeat(512) }),
      () => enqueue({ endpoint: ep(30), payload: 1, signing_secret: 's'.repeat(513) }),
      400,
      /signing_secret/,
    );
    await pair(
      'attempts max',
      () => enqueue({ endpoint: ep(30), payload: 1, max_attempts: 1000 }),
      () => enqueue({ endpoint: ep(30), payload: 1, max_attempts: 1001 }),
      400,
      /max_attempts/,
    );
    await pair(
      'attempts min',
      () => enqueue({ endpoint: ep(30), payload: 1, max_attempts: 1 }),
      () => enqueue({ endpoint: ep(30), payload: 1, max_attempts: 0 }),
      400,
      /max_attempts/,
    );
  });

  it('admin bodies (64 KB) and per-config secret length (16..512)', async () => {
    const put = (body: string) =>
      fetch(`${f.baseUrl}/configs/lim/secret`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body }).then(async (r) => ({
        status: r.status,
        json: (await r.json()) as any,
      }));
    const padded = (size: number) => {
      const core = JSON.stringify({ secret: 'S'.repeat(16) });
      return core + ' '.repeat(size - core.length);
    };
    expect((await put(padded(MAX_ADMIN_BODY))).status).toBe(200);
    expect((await put(padded(MAX_ADMIN_BODY + 1))).status).toBe(413);
    for (const [len, status] of [
      [16, 200],
      [15, 400],
      [512, 200],
      [513, 400],
    ] as const) {
      expect((await put(JSON.stringify({ secret: 'S'.repeat(len) }))).status, `secret of ${len}`).toBe(status);
    }
    expect((await put(JSON.stringify({ secret: 'whsec_not base64!!!!!!!!!' }))).status).toBe(400);
  });
});

describe('request header limits (api.max_request_headers, api.max_request_header_bytes): 431', () => {
  const config = loadConfig({ env: {}, overrides: { 'api.max_request_headers': 10, 'api.max_request_header_bytes': 2000, 'api.auth.enabled': false } });
  const app = createApiApp({ config, enqueue: async () => [], hot: {} as never, log: silentLogger, dependencies: [], clock: { now: () => Date.now() } });
  const headers = (n: number, bytes = 0) => {
    const h: Record<string, string> = {};
    for (let i = 0; i < n; i++) h[`x-h${i}`] = 'v';
    if (bytes) {
      const used = Object.entries(h).reduce((s, [k, v]) => s + k.length + v.length, 0);
      h['x-h0'] = 'v'.repeat(bytes - used + 1);
    }
    return h;
  };

  it('count: 10 headers pass, 11 are refused', async () => {
    expect((await app.request('/health', { headers: headers(10) })).status).toBe(200);
    const over = await app.request('/health', { headers: headers(11) });
    expect(over.status).toBe(431);
    expect(((await over.json()) as any).error).toMatchObject({ code: 'too_large', limit: 10 });
  });

  it('bytes: 2000 pass, 2001 are refused', async () => {
    expect((await app.request('/health', { headers: headers(2, 2000) })).status).toBe(200);
    expect((await app.request('/health', { headers: headers(2, 2001) })).status).toBe(431);
  });
});
