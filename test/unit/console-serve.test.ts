import { describe, expect, it } from 'vitest';
import { buildConsole, withConsole } from '../../workers/node/console';

// The console's static routes in front of the API (workers/node/console.ts): which paths
// they answer, their headers, and the lazily built bundle.

const api = async (req: Request) => Response.json({ api: new URL(req.url).pathname });
const asset = (text: string, type: string) => ({ body: new TextEncoder().encode(text), type, etag: `"${text.length}"` });
const fakeBundle = () =>
  new Map([
    ['index.html', asset('<!doctype html><title>x</title>', 'text/html; charset=utf-8')],
    ['app.js', asset('console.log(1)', 'text/javascript; charset=utf-8')],
    ['app.css', asset('body{}', 'text/css; charset=utf-8')],
  ]);

const serve = (auth = false) => {
  let builds = 0;
  const fetch = withConsole(api, { auth, server: 'howk-dev' }, async () => {
    builds++;
    return fakeBundle();
  });
  return { get: (path: string, init?: RequestInit) => fetch(new Request(`http://h${path}`, init)), builds: () => builds };
};

describe('console routes', () => {
  it('answers the pages with index.html under a strict CSP and leaves every API path to the API', async () => {
    const s = serve();
    for (const path of ['/console', '/console/', '/console/deliveries', '/lab', '/lab/']) {
      const r = await s.get(path);
      expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(r.headers.get('content-security-policy')).toMatch(/default-src 'none'; script-src 'self'; style-src 'self'/);
      expect(r.headers.get('content-security-policy')).not.toMatch(/unsafe/);
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
      expect(r.headers.get('x-frame-options')).toBe('DENY');
    }
    for (const path of ['/webhooks', '/stats', '/consoles', '/labs', '/lab/x', '/health']) expect(await (await s.get(path)).json()).toEqual({ api: path });
  });

  it('serves the assets, 404s others, refuses writes, and builds the bundle once, at the first console request', async () => {
    const s = serve();
    await s.get('/stats');
    expect(s.builds()).toBe(0);
    const js = await s.get('/console/assets/app.js');
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await js.text()).toBe('console.log(1)');
    const again = await s.get('/console/assets/app.js', { headers: { 'if-none-match': js.headers.get('etag')! } });
    expect(again.status).toBe(304);
    const missing = await s.get('/console/assets/other.js');
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect((await s.get('/console/assets/..%2f..%2fpackage.json')).status).toBe(404);
    expect((await s.get('/console/deliveries', { method: 'POST' })).status).toBe(405);
    await Promise.all([s.get('/lab'), s.get('/console/assets/app.css')]);
    expect(s.builds()).toBe(1);
  });

  it('tells the page whether the API asks for keys', async () => {
    expect(await (await serve(true).get('/console/env.json')).json()).toEqual({ auth: true, server: 'howk-dev' });
    expect(await (await serve(false).get('/console/env.json')).json()).toEqual({ auth: false, server: 'howk-dev' });
  });

  it('a failed build is retried on the next request', async () => {
    let n = 0;
    const fetch = withConsole(api, { auth: false, server: 'howk-api' }, async () => {
      if (++n === 1) throw new Error('esbuild failed');
      return fakeBundle();
    });
    await expect(fetch(new Request('http://h/lab'))).rejects.toThrow('esbuild failed');
    expect((await fetch(new Request('http://h/lab'))).status).toBe(200);
  });

  it('the real bundle builds from console/ with no eval, no inline handler and nothing from Node or wasmoon', async () => {
    const b = await buildConsole();
    expect([...b.keys()].sort()).toEqual(['app.css', 'app.js', 'index.html']);
    const js = new TextDecoder().decode(b.get('app.js')!.body);
    expect(js).not.toMatch(/\beval\(|new Function\(|from ?"node:|wasmoon/);
    const html = new TextDecoder().decode(b.get('index.html')!.body);
    expect(html).toContain('<script type="module" src="/console/assets/app.js"></script>');
    expect(html).not.toMatch(/<script>|\son[a-z]+=|\sstyle=/);
  }, 60_000);
});
