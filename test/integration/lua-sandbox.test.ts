import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniq, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { useRedisDb } from '../helpers/redis-db';

// The Lua sandbox end to end (docs/LUA.md): per-config delivery scripts run by the worker of a
// fleet on real Kafka + Redis (a db of its own), transformers run by /incoming. The engine's own unit
// tests (test/unit/lua/sandbox.test.ts) cover the mechanisms; these check what a user sees:
// dead letters with the right reason, nothing sent, nothing enqueued.

const redisDb = useRedisDb();
// A long deadline keeps the memory bomb's outcome a memory kill even on a loaded machine (it
// reaches the cap in about 100 ms alone, but took more than 1 s at a load average of 40, and
// was then stopped as a timeout); a small cap keeps the bomb short.
const LUA_TIMEOUT_MS = 5000;
const LUA_MEMORY_MB = 8;

const BOMB = "local t = {} for i = 1, 1e9 do t[i] = string.rep('x', 1000) .. i end";

describe('Lua sandbox through the worker and /incoming (real Kafka + Redis)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let dir: string;
  beforeAll(async () => {
    rx = await startReceiver();
    const base = rx.url('').replace(/\/$/, '');
    dir = await mkdtemp(join(tmpdir(), 'howk-lua-sandbox-'));
    const fivePosts = `for i = 1, 5 do assert(howk.post('${base}/killed', { i = i })) end\n`;
    await writeFile(join(dir, 'five-then-loop.lua'), `${fivePosts}while true do end\n`);
    await writeFile(join(dir, 'five-then-bomb.lua'), `${fivePosts}${BOMB}\n`);
    f = await startTestFleet('kafka', { redisDb: redisDb(), overrides: { 'lua.timeout': LUA_TIMEOUT_MS, 'lua.memory_limit_mb': LUA_MEMORY_MB, 'transformer.script_dirs': [dir] } });
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const put = async (config: string, script: string) => {
    const res = await fetch(`${f.baseUrl}/config/${config}/script`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: script });
    expect(res.status, await res.clone().text()).toBe(200);
  };
  const enqueue = async (config: string, path: string, payload: unknown = {}) => {
    const res = await f.post(`/webhooks/${config}/enqueue`, { endpoint: rx.url(path), payload });
    expect(res.status).toBe(202);
    return ((await res.json()) as any).webhook_id as string;
  };
  const deadLetter = (id: string) =>
    waitFor(
      () => {
        const r = f.records('deadletter').find((x) => x.value?.includes(id));
        return r ? (JSON.parse(r.value!) as { reason_type: string; reason: string }) : undefined;
      },
      { what: `dead letter of ${id}`, timeoutMs: 60_000 },
    );
  const result = (id: string) =>
    waitFor(
      () => {
        const r = f.records('results').find((x) => x.value?.includes(id));
        return r ? (JSON.parse(r.value!) as { outcome: string; duration_ms: number }) : undefined;
      },
      { what: `result of ${id}`, timeoutMs: 60_000 },
    );
  const deliveryOf = (id: string) => waitFor(() => rx.received.find((r) => r.headers['webhook-id'] === id), { what: `delivery of ${id}` });

  it('a tight loop is stopped by the CPU deadline and dead-letters script_timeout; nothing is sent', async () => {
    await put('sb-loop', 'while true do end');
    const id = await enqueue('sb-loop', '/never');
    const dl = await deadLetter(id);
    expect(dl.reason_type).toBe('script_timeout');
    expect(dl.reason).toMatch(new RegExp(`\\(${LUA_TIMEOUT_MS} ms\\)`));
    // duration_ms is measured by the worker around the script run. It cannot be below the
    // deadline; how far above depends on the machine's load, so it is reported, not asserted.
    const r = await result(id);
    expect(r.outcome).toBe('script_timeout');
    expect(r.duration_ms).toBeGreaterThanOrEqual(LUA_TIMEOUT_MS);
    console.log(`while true do end: stopped after ${r.duration_ms} ms (lua.timeout ${LUA_TIMEOUT_MS} ms)`);
    expect(rx.received.filter((x) => x.path === '/never')).toHaveLength(0);
  });

  it('a memory bomb stops at lua.memory_limit_mb and dead-letters script_memory_limit; a script below the cap is delivered', async () => {
    await put('sb-bomb', BOMB);
    // ~3 MB of live strings: under the 8 MB cap.
    await put('sb-big', "local t = {} for i = 1, 3000 do t[i] = string.rep('x', 1000) .. i end\nrequest.headers['X-Built'] = #t");
    const bomb = await enqueue('sb-bomb', '/never');
    const big = await enqueue('sb-big', '/big');
    const dl = await deadLetter(bomb);
    expect(dl.reason_type).toBe('script_memory_limit');
    expect(dl.reason).toMatch(new RegExp(`memory limit of ${LUA_MEMORY_MB} MB`));
    const r = await result(bomb);
    expect(r.outcome).toBe('script_memory_limit');
    console.log(`memory bomb: stopped at the ${LUA_MEMORY_MB} MB cap after ${r.duration_ms} ms`);
    expect((await deliveryOf(big)).headers['x-built']).toBe('3000');
    expect(rx.received.filter((x) => x.path === '/never')).toHaveLength(0);
  });

  it('io, os.execute, require, load, debug and string.rep abuse are refused inside a running delivery script', async () => {
    const marker = join(tmpdir(), `${uniq('howk-lua-escape')}`);
    // Each probe under pcall, so the script survives to report what happened to each.
    await put(
      'sb-probe',
      `
      local probes = {
        io = function() return io.open('/etc/passwd') end,
        os_execute = function() return os.execute('touch ${marker}') end,
        require = function() return require('os') end,
        load = function() return load('return 1')() end,
        loadstring = function() return loadstring('return 1') end,
        dofile = function() return dofile('/etc/passwd') end,
        debug = function() return debug.sethook() end,
        string_rep = function() return string.rep('x', 1e9) end,
        string_rep_method = function() return ('x'):rep(2^31, ',') end,
        string_dump = function() return string.dump(print) end,
        package = function() return package.loadlib('libc.so.6', 'system') end,
      }
      local out = {}
      for name, fn in pairs(probes) do
        local ok, err = pcall(fn)
        out[name] = ok and 'ALLOWED' or tostring(err)
      end
      request.body = json.encode(out)
    `,
    );
    const r = await deliveryOf(await enqueue('sb-probe', '/probe'));
    const out = JSON.parse(r.body.toString()) as Record<string, string>;
    const expected: Record<string, RegExp> = {
      io: /global 'io'/,
      os_execute: /global 'os'/,
      require: /global 'require'/,
      load: /global 'load'/,
      loadstring: /global 'loadstring'/,
      dofile: /global 'dofile'/,
      debug: /global 'debug'/,
      string_rep: /string\.rep: result too large/,
      string_rep_method: /string\.rep: result too large/,
      string_dump: /field 'dump'/,
      package: /global 'package'/,
    };
    for (const [name, msg] of Object.entries(expected)) expect(out[name], name).toMatch(msg);
    expect(existsSync(marker)).toBe(false);
    // Without pcall, the refusal dead-letters the webhook as a runtime error naming the line.
    await put('sb-io', "local x = 1\nlocal f = io.open('/etc/passwd')");
    const dl = await deadLetter(await enqueue('sb-io', '/never'));
    expect(dl.reason_type).toBe('script_runtime_error');
    expect(dl.reason).toMatch(/script:2: attempt to index a nil value \(global 'io'\)/);
  });

  it("a global set by one config's script is invisible to another's, and to its own next run", async () => {
    await put(
      'sb-writer',
      `
      SHARED = 'from-writer'
      string.upper = function() return 'hijacked' end
      getmetatable('').__index = { len = function() return -1 end }
      COUNT = (COUNT or 0) + 1
      request.headers['X-Count'] = COUNT
    `,
    );
    await put(
      'sb-reader',
      `
      request.headers['X-Shared'] = tostring(SHARED)
      request.headers['X-Upper'] = string.upper('b')
      request.headers['X-Len'] = ('abc'):len()
    `,
    );
    const w1 = await deliveryOf(await enqueue('sb-writer', '/writer'));
    const reader = await deliveryOf(await enqueue('sb-reader', '/reader'));
    const w2 = await deliveryOf(await enqueue('sb-writer', '/writer'));
    expect([reader.headers['x-shared'], reader.headers['x-upper'], reader.headers['x-len']]).toEqual(['nil', 'B', '3']);
    expect([w1.headers['x-count'], w2.headers['x-count']]).toEqual(['1', '1']);
  });

  it('a transformer killed after 5 posts (timeout, memory) enqueues none of them', async () => {
    const timeout = await f.post('/incoming/five-then-loop', {});
    expect(timeout.status).toBe(422);
    expect(((await timeout.json()) as any).error.code).toBe('script_timeout');
    const memory = await f.post('/incoming/five-then-bomb', {});
    expect(memory.status).toBe(422);
    expect(((await memory.json()) as any).error.code).toBe('script_memory_limit');
    // A webhook enqueued afterwards is on the topic; the killed runs' posts are not.
    const later = await enqueue('sb-after', '/after');
    await waitFor(() => f.records('pending').some((r) => r.value?.includes(later)), { what: 'the later webhook on the topic' });
    expect(f.records('pending').filter((r) => r.value && JSON.parse(r.value).config_id.startsWith('incoming:'))).toHaveLength(0);
    expect(rx.received.filter((x) => x.path === '/killed')).toHaveLength(0);
  });

  it('bad input on the script routes: oversized JSON-wrapped script and dry-run script → 413, syntax error in a dry run → 400 with the line, no script → 404', async () => {
    const big = 'x'.repeat(f.config.lua.max_script_bytes);
    const wrapped = await fetch(`${f.baseUrl}/config/sb-bad/script`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ script: `-- ${big}` }),
    });
    expect(wrapped.status).toBe(413);
    expect(((await wrapped.json()) as any).error.message).toMatch(/script/);
    expect((await f.post('/config/sb-bad/script/test', { payload: {}, script: `-- ${big}` })).status).toBe(413);
    const syn = await f.post('/config/sb-bad/script/test', { payload: {}, script: "local a = 1\n\nrequest.headers['x'] = = 2" });
    expect(syn.status).toBe(400);
    const e = ((await syn.json()) as any).error;
    expect([e.code, e.line]).toEqual(['script_syntax_error', 3]);
    expect(e.message).toMatch(/^script:3: unexpected symbol near '='/);
    const none = await f.post('/config/sb-bad/script/test', { payload: {} });
    expect(none.status).toBe(404);
    expect(((await none.json()) as any).error.code).toBe('script_not_found');
    const notJson = await fetch(`${f.baseUrl}/config/sb-bad/script`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"script": ' });
    expect(notJson.status).toBe(400);
    expect((await fetch(`${f.baseUrl}/config/sb-bad/script`)).status).toBe(404);
  });
});
