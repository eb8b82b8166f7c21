import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { startTestFleet, TEST_SECRET, type Mode, type TestFleet } from '../helpers/fleet';
import { postRaw, startReceiver, type Receiver } from '../helpers/receiver';
import { verifyStandardWebhook } from '../helpers/standard-webhooks';

// POST /incoming/:name (docs/LUA.md): transformers loaded from transformer.script_dirs, run on the
// embedded fleet and on real Kafka + Redis (a Redis db of its own).

const SCRIPTS: Record<string, string> = {
  'fanout.lua': `
    local p = request.payload
    for _, dest in ipairs({'/fan/a', '/fan/b', '/fan/c'}) do
      assert(howk.post(p.base .. dest, { order = p.order, dest = dest }, { headers = { ['X-Source'] = 'fanout' } }))
    end
  `,
  'five-then-fail.lua': `
    for i = 1, 5 do assert(howk.post(request.payload.base .. '/five', { i = i })) end
    error('failed after 5 posts')
  `,
  'guarded.lua': `assert(howk.post(request.payload.base .. '/guarded', { user_header = request.headers['authorization'] or 'none' }))`,
  'guarded.passwd': '# users of guarded\nalice:s3cret-pass\nbob:$2b$10$abcdefghijklmnopqrstuuJ9Lm0yq8F3e1mY9m6dZbq4Tz1lF0b2W\n',
  'locked.lua': `assert(howk.post(request.payload.base .. '/locked', {}))`,
  'broken.lua': 'local x = 1\nlocal y = = 2\n',
  'fenced.lua': `assert(howk.post(request.payload.base .. '/fenced', {}))`,
  'dedupe.lua': `
    local id = request.payload.event_id
    if kv.get('seen:' .. id) then return end
    assert(kv.set('seen:' .. id, '1', 60))
    assert(howk.post(request.payload.base .. '/dedupe', { event_id = id }))
  `,
  'fenced.json': JSON.stringify({ allowed_domains: ['example.com'] }),
};

const basic = (user: string, pass: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` });

const incomingSuite = (mode: Mode) =>
  describe(`/incoming transformers (${mode})`, () => {
    let f: TestFleet;
    let rx: Receiver;
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'howk-incoming-'));
      for (const [file, text] of Object.entries(SCRIPTS)) await writeFile(join(dir, file), text);
      // A passwd "file" that cannot be read (a directory: EISDIR, even for root).
      await mkdir(join(dir, 'locked.passwd'));
      rx = await startReceiver();
      // These scripts are short; what they do is asserted here, the deadline in lua-sandbox. At
      // the default 500 ms, five-then-fail was stopped as a timeout at a load average of 40.
      f = await startTestFleet(mode, { overrides: { 'transformer.script_dirs': [dir], 'lua.timeout': 5000 } });
    });
    afterAll(async () => {
      await f?.stop();
      await rx?.close();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    const base = () => rx.url('').replace(/\/$/, '');
    const pendingFor = (configId: string) => f.records('pending').filter((r) => r.value && JSON.parse(r.value).config_id === configId);

    it('fans one inbound request out to 3 webhooks, delivered and signed', async () => {
      const res = await f.post('/incoming/fanout', { base: base(), order: 42 });
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      expect(body.count).toBe(3);
      expect(body.webhooks.map((w: any) => w.endpoint)).toEqual(['/fan/a', '/fan/b', '/fan/c'].map((p) => rx.url(p)));
      body.webhooks.forEach((w: any) => expect(w.id).toMatch(/^wh_[0-9A-Z]{26}$/));
      await waitFor(() => rx.received.filter((r) => r.path.startsWith('/fan/')).length >= 3, { what: '3 fan-out deliveries' });
      const got = rx.received.filter((r) => r.path.startsWith('/fan/'));
      expect(new Set(got.map((r) => r.headers['webhook-id']))).toEqual(new Set(body.webhooks.map((w: any) => w.id)));
      for (const r of got) {
        expect(JSON.parse(r.body.toString())).toEqual({ order: 42, dest: r.path });
        expect(r.headers['x-source']).toBe('fanout');
        expect(verifyStandardWebhook(TEST_SECRET, r.headers as any, r.body)).toBe(true);
      }
      const st = (await (await fetch(`${f.baseUrl}/webhooks/${body.webhooks[0].id}/status`)).json()) as any;
      expect(st.config_id).toBe('incoming:fanout');
    });

    it('enqueues none of 5 posts when the script fails afterwards (422 with the reason type)', async () => {
      const res = await f.post('/incoming/five-then-fail', { base: base() });
      expect(res.status).toBe(422);
      const body = (await res.json()) as any;
      expect(body.error.code).toBe('script_runtime_error');
      expect(body.error.message).toMatch(/failed after 5 posts/);
      expect(body.error.line).toBe(3);
      // A marker through another transformer proves the pipeline moved on meanwhile.
      expect((await f.post('/incoming/fanout', { base: base(), order: 'marker' })).status).toBe(200);
      await waitFor(() => rx.received.filter((r) => r.body.toString().includes('marker')).length >= 3, { what: 'marker deliveries' });
      expect(pendingFor('incoming:five-then-fail')).toHaveLength(0);
      expect(rx.received.filter((r) => r.path === '/five')).toHaveLength(0);
    });

    it('asks for Basic credentials when the script has a passwd file (401 + WWW-Authenticate)', async () => {
      const cases: [Record<string, string>, RegExp][] = [
        [{}, /required/],
        [basic('alice', 'wrong'), /invalid credentials/],
        [basic('mallory', 's3cret-pass'), /invalid credentials/],
        [basic('bob', 'anything'), /invalid credentials/],
        [{ authorization: 'Bearer abc' }, /required/],
      ];
      for (const [headers, msg] of cases) {
        const res = await f.post('/incoming/guarded', { base: base() }, headers);
        expect(res.status, JSON.stringify(headers)).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
        expect(((await res.json()) as any).error.message).toMatch(msg);
      }
      const ok = await f.post('/incoming/guarded', { base: base() }, basic('alice', 's3cret-pass'));
      expect(ok.status).toBe(200);
      const r = await waitFor(() => rx.received.find((x) => x.path === '/guarded'), { what: 'guarded delivery' });
      // The script never sees its own credentials.
      expect(JSON.parse(r.body.toString())).toEqual({ user_header: 'none' });
    });

    it('refuses every request to a script whose passwd file is unreadable', async () => {
      for (const headers of [{}, basic('alice', 's3cret-pass')]) {
        const res = await f.post('/incoming/locked', { base: base() }, headers);
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toMatch(/^Basic/);
      }
    });

    it('answers 404 for an unknown script, 413 for an oversized body, 400 with the line for a syntax error', async () => {
      expect((await f.post('/incoming/nope', {})).status).toBe(404);
      expect((await f.post('/incoming/..%2Ffanout', {})).status).toBe(404);
      const big = await postRaw(`${f.baseUrl}/incoming/fanout`, JSON.stringify({ base: base(), pad: 'x'.repeat(f.config.api.max_request_size) }));
      expect(big.status).toBe(413);
      const syn = await f.post('/incoming/broken', {});
      expect(syn.status).toBe(400);
      const e = ((await syn.json()) as any).error;
      expect(e.code).toBe('script_syntax_error');
      expect(e.message).toMatch(/^script:2: unexpected symbol near '='/);
      expect(e.line).toBe(2);
    });

    it('honours the allowed_domains of name.json', async () => {
      const res = await f.post('/incoming/fenced', { base: base() });
      expect(res.status).toBe(422);
      expect(((await res.json()) as any).error.message).toMatch(/domain not allowed: 127\.0\.0\.1/);
      expect(pendingFor('incoming:fenced')).toHaveLength(0);
    });

    it('dedupes with kv across requests', async () => {
      const ev = `ev-${Date.now()}`;
      const a = (await (await f.post('/incoming/dedupe', { base: base(), event_id: ev })).json()) as any;
      const b = (await (await f.post('/incoming/dedupe', { base: base(), event_id: ev })).json()) as any;
      expect([a.count, b.count]).toEqual([1, 0]);
      await waitFor(() => rx.received.find((r) => r.path === '/dedupe'), { what: 'deduped delivery' });
    });

    it('reloads the directory: a script added later appears, a removed one disappears', async () => {
      await writeFile(join(dir, 'late.lua'), `assert(howk.post(request.payload.base .. '/late', {}))`);
      expect((await f.post('/incoming/late', { base: base() })).status).toBe(404);
      await f.fleet.transformers!.reload();
      expect((await f.post('/incoming/late', { base: base() })).status).toBe(200);
      await rm(join(dir, 'late.lua'));
      await f.fleet.transformers!.reload();
      expect((await f.post('/incoming/late', { base: base() })).status).toBe(404);
    });
  });

incomingSuite('memory');
incomingSuite('kafka');
