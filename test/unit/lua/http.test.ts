import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FetchLike, HttpPolicy } from '../../../core/lua/types';
import { logsOf } from './helpers';

// A loopback server (127.0.0.1 only) with a route per behaviour under test.
let server: Server;
let base = '';
let other: Server;
let otherBase = '';
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '/';
      if (url === '/echo') {
        res.writeHead(201, { 'content-type': 'application/json', 'x-reply': 'yes' });
        res.end(
          JSON.stringify({ method: req.method, body: Buffer.concat(chunks).toString(), ctype: req.headers['content-type'] ?? null, auth: req.headers.authorization ?? null }),
        );
      } else if (url === '/big') {
        res.writeHead(200);
        res.end('x'.repeat(2 * 1024 * 1024));
      } else if (url === '/slow') {
        setTimeout(() => res.end('late'), 1000);
      } else if (url === '/redirect-allowed') {
        res.writeHead(302, { location: '/echo' });
        res.end();
      } else if (url === '/redirect-away') {
        res.writeHead(302, { location: `http://localhost:${(server.address() as AddressInfo).port}/echo` });
        res.end();
      } else if (url === '/redirect-other-origin') {
        res.writeHead(307, { location: `${otherBase}/echo` });
        res.end();
      } else if (url === '/loop') {
        res.writeHead(302, { location: '/loop' });
        res.end();
      } else {
        res.writeHead(404);
        res.end('no');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Another origin (same host, another port) that echoes what it got.
  other = createServer((req, res) => res.end(JSON.stringify({ auth: req.headers.authorization ?? null, cookie: req.headers.cookie ?? null, keep: req.headers['x-keep'] ?? null })));
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  otherBase = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
});
afterAll(() => Promise.all([server, other].map((s) => new Promise<void>((r) => s.close(() => r())))));

const policy: HttpPolicy = { allow: ['127.0.0.1'], timeoutMs: 2000, maxResponseBytes: 64 * 1024 };
const fetchFn: FetchLike = (url, init) => fetch(url, init);
// A roomy CPU deadline: these tests are about the http module, and a loaded machine can stretch
// a slice of Lua past the default 500 ms (the deadline has tests of its own).
const run = (code: string, p: HttpPolicy = policy) => logsOf(code.replaceAll('BASE', base), { fetch: fetchFn, http: p }, { timeoutMs: 5000 });

describe('http module', () => {
  it('keeps credentials on a same-origin redirect and drops them on a cross-origin one', async () => {
    const lines = await run(`
      local h = {Authorization = 'Bearer t', Cookie = 'c=1', ['X-Keep'] = 'k'}
      local same = assert(http.get('BASE/redirect-allowed', {headers = h}))
      local away = assert(http.get('BASE/redirect-other-origin', {headers = h}))
      local a = json.decode(away.body)
      print(json.decode(same.body).auth, tostring(a.auth), tostring(a.cookie), a.keep)`);
    expect(lines).toEqual(['Bearer t\tnull\tnull\tk']);
  });

  it('GET returns status, body and lower-case headers', async () => {
    const lines = await run(`local r = http.get('BASE/echo') print(r.status, r.headers['x-reply'], json.decode(r.body).method)`);
    expect(lines).toEqual(['201\tyes\tGET']);
  });

  it('POST a table sends JSON; a string body is sent as is; headers pass through', async () => {
    const lines = await run(`
      local r = http.post('BASE/echo', {a = 1}, {headers = {Authorization = 'Bearer t'}})
      local e = json.decode(r.body) print(e.method, e.body, e.ctype, e.auth)
      r = http.put('BASE/echo', 'raw text') e = json.decode(r.body) print(e.method, e.body)
      r = http.delete('BASE/echo') print(json.decode(r.body).method)`);
    expect(lines).toEqual(['POST\t{"a":1}\tapplication/json\tBearer t', 'PUT\traw text', 'DELETE']);
  });

  it('a non-2xx status is a response, not an error', async () => {
    expect(await run(`local r, err = http.get('BASE/missing') print(r.status, r.body, err)`)).toEqual(['404\tno\tnil']);
  });

  it('refuses hosts outside the allowlist without sending anything', async () => {
    const before = hits.length;
    const port = base.split(':').pop();
    const lines = await run(`print(http.get('http://localhost:${port}/echo')) print(http.get('file:///etc/passwd')) print(http.get('http://user:pw@127.0.0.1/'))`);
    expect(lines).toEqual(['nil\thost not allowed: localhost', 'nil\tscheme not allowed: file:', 'nil\tcredentials in URLs are not allowed']);
    expect(hits.length).toBe(before);
  });

  it('follows redirects only to allowed hosts, and only so many', async () => {
    const lines = await run(`
      local r = http.get('BASE/redirect-allowed') print(r.status)
      print(http.get('BASE/redirect-away'))
      print(http.get('BASE/loop'))`);
    expect(lines).toEqual(['201', 'nil\thost not allowed: localhost', 'nil\ttoo many redirects (limit 3)']);
  });

  it('caps the response size and the time', async () => {
    const lines = await run(`print(http.get('BASE/big')) print(http.get('BASE/slow', {timeout_ms = 100}))`);
    expect(lines).toEqual([`nil\tresponse body exceeds ${64 * 1024} bytes`, 'nil\thttp timeout after 100 ms']);
  });

  it('wildcard entries allow subdomains only', async () => {
    const asked: string[] = [];
    const fake: FetchLike = async (url) => (asked.push(url), new Response('ok'));
    const lines = await logsOf(`print(http.get('http://api.example.com/').body) print(http.get('http://example.com/'))`, { fetch: fake, http: { allow: ['*.example.com'] } });
    expect(lines).toEqual(['ok', 'nil\thost not allowed: example.com']);
    expect(asked).toEqual(['http://api.example.com/']);
  });

  it('is unavailable unless the host configures it', async () => {
    expect(await logsOf(`print(http.get('http://127.0.0.1/'))`)).toEqual(['nil\thttp is not configured']);
  });
});
