import { afterAll, describe, expect, it } from 'vitest';
import { keys } from '../../../core/domain/keys';
import { LuaRuntimeError, LuaTimeoutError, runDeliveryScript, runTransformer, type KvStore } from '../../../core/lua';
import { createLuaPool } from '../../../workers/node/lua-pool/pool';
import { baseInput } from './helpers';

// The worker-thread pool behind howk-api/howk-worker: the services a script calls stay in
// this thread and must behave as they do in-process; a run the VM cannot stop is stopped by
// terminating its thread, and the next run gets a fresh one.

const pool = createLuaPool({ size: 2, limits: { timeoutMs: 300 } });
afterAll(() => pool.close());

const memoryKv = (): KvStore & { data: Map<string, string> } => {
  const data = new Map<string, string>();
  return { data, get: async (k) => data.get(k) ?? null, set: async (k, v) => void data.set(k, v), del: async (k) => void data.delete(k) };
};

describe('Lua worker-thread pool', () => {
  it('proxies kv, log, credentials and http to this thread, with the same results as in-process', async () => {
    const kv = memoryKv();
    const logs: string[] = [];
    const seen: string[] = [];
    const fetchFn = async (url: string, init: { method: string; headers: Record<string, string>; body?: string }) => {
      seen.push(`${init.method} ${url} ${init.body ?? ''}`);
      if (url.endsWith('/old')) return new Response(null, { status: 302, headers: { location: '/new' } });
      return new Response(JSON.stringify({ token: 't-1' }), { status: 201, headers: { 'content-type': 'application/json' } });
    };
    const r = await runDeliveryScript(
      `kv.set('n', '41')
       local n = tonumber(kv.get('n')) + 1
       local res = http.post('https://api.example.com/old', { a = 1 })
       local secret = crypto.decrypt_credential('partner')
       local ok, err = pcall(crypto.decrypt_credential, 'nope')
       log.info('ran', { n = n, status = res.status })
       request.headers['x-n'] = n
       request.headers['x-token'] = json.decode(res.body).token
       request.headers['x-secret'] = secret`,
      baseInput,
      {
        engine: pool,
        services: {
          kv,
          fetch: fetchFn as never,
          http: { allow: ['api.example.com'] },
          decryptCredential: async (name) => (name === 'partner' ? 's3cret' : null),
          log: (_level, message, fields) => logs.push(`${message} n=${String(fields?.n)} status=${String(fields?.status)}`),
        },
      },
    );
    expect(r.headers).toMatchObject({ 'x-n': '42', 'x-token': 't-1', 'x-secret': 's3cret' });
    expect(kv.data.get(keys.kv({ kind: 'config', id: 'cfg_a' }, 'n'))).toBe('41');
    // The redirect was followed by the http module (in the thread), 302 POST → GET.
    expect(seen).toEqual(['POST https://api.example.com/old {"a":1}', 'GET https://api.example.com/new ']);
    expect(logs).toEqual(['ran n=42 status=201']);
  });

  it('howk.post gets its verdict synchronously; a refused post is (nil, err) in the script', async () => {
    const lines: string[] = [];
    const r = await runTransformer(
      `assert(howk.post('https://a.example.com/x', { n = 1 }))
       local ok, err = howk.post('ftp://a.example.com', {})
       log.info(tostring(ok) .. ' ' .. err)`,
      { body: '{}', headers: {} },
      { engine: pool, services: { log: (_l, m) => lines.push(m) } },
    );
    expect(r.webhooks.map((w) => [w.endpoint, w.payload])).toEqual([['https://a.example.com/x', '{"n":1}']]);
    expect(lines).toEqual(['nil howk.post: endpoint scheme not allowed: ftp:']);
  });

  it('errors cross as the same classes (runtime error with its line)', async () => {
    const e = await runDeliveryScript('local a = 1\nerror("boom")', baseInput, { engine: pool }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(LuaRuntimeError);
    expect((e as LuaRuntimeError).line).toBe(2);
  });

  it('a C call the VM cannot interrupt is stopped by terminating its thread; the next run works', async () => {
    const before = pool.terminated;
    const t0 = performance.now();
    const e = await runDeliveryScript("local s = string.rep('a', 30000) return s:find('.-.-.-b')", baseInput, { engine: pool }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(LuaTimeoutError);
    expect((e as Error).message).toMatch(/worker thread was terminated/);
    // The deadline (300 ms) + the pool's margin (500 ms) + slack for a loaded machine.
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(pool.terminated).toBe(before + 1);
    const ok = await runDeliveryScript("request.headers['x-after'] = 'yes'", baseInput, { engine: pool });
    expect(ok.headers['x-after']).toBe('yes');
  });
});
