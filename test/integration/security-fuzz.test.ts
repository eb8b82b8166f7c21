import bcrypt from 'bcryptjs';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointHash } from '../../core/domain/ids';
import { requireEnv, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

// schemathesis against a live howk-api (keys on, no worker: nothing is delivered anywhere),
// in the bounded CI profile of scripts/fuzz.mjs (about a minute).
describe('fuzzing howk-api with its own OpenAPI document', () => {
  it('finds no 5xx and no response that violates the spec', async () => {
    const env = { ...process.env, KAFKA_BROKERS: requireEnv('KAFKA_BROKERS'), REDIS_URL: requireEnv('REDIS_URL') };
    const child = spawn(process.execPath, [join(root, 'scripts/fuzz.mjs'), '--profile', 'ci'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (out += b));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    const summary = /fuzz: .*/.exec(out)?.[0] ?? '';
    console.log(summary);
    expect(code, out.slice(-6000)).toBe(0);
    expect(summary).toMatch(/, 0 failures/);
  }, 300_000);
});

// Hostile header and secret values, each in a single and a batch enqueue and (secrets) a config
// secret PUT: every one is a 400 naming the field, never a 5xx, and nothing reaches the topic.
describe('hostile header and secret values', () => {
  const CONTROL = [...Array.from({ length: 0x20 }, (_, c) => c).filter((c) => c !== 0x09), 0x7f].map((c) => `a${String.fromCharCode(c)}b`);
  const WIDE = ['€', '5 €', '日本', '😀', '\u0100', '\u2028', '\ufeff', '\ud800'];
  const HOP = [
    'Connection',
    'keep-alive',
    'UPGRADE',
    'Expect',
    'Transfer-Encoding',
    'te',
    'Trailer',
    'Proxy-Connection',
    'Host',
    'content-length',
    'Proxy-Authorization',
    'HTTP2-Settings',
  ];
  const NAMES = ['Bad Name', 'x:y', 'x\u00e9', '(x)', 'x/y', 'a\u0000'];
  const SECRETS = [
    'whsec_AA',
    'whsec_!!!!',
    'whsec_AAAAAAAAAAAAAAAAAAAA',
    'whsec_ AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    `whsec_${'A'.repeat(20)}===`,
    `whsec_${Buffer.alloc(24).toString('base64url')}-_`,
  ];

  it('are all refused with 400 naming the field; nothing is enqueued', async () => {
    const f = await startTestFleet('kafka', { roles: { api: true, worker: false, scheduler: false } });
    try {
      const ep = 'http://127.0.0.1:9/x';
      const cases: [unknown, string][] = [
        ...[...CONTROL, ...WIDE].map((v): [unknown, string] => [{ headers: { 'X-V': v } }, 'headers.X-V']),
        ...HOP.map((n): [unknown, string] => [{ headers: { [n]: 'v' } }, `headers.${n}`]),
        ...NAMES.map((n): [unknown, string] => [{ headers: { [n]: 'v' } }, `headers.${n}`]),
        ...SECRETS.map((s): [unknown, string] => [{ signing_secret: s }, 'signing_secret']),
      ];
      for (const [extra, field] of cases) {
        const item = { endpoint: ep, payload: {}, ...(extra as object) };
        const one = await f.post('/webhooks/hostile/enqueue', item);
        const oneBody = (await one.json()) as any;
        expect([one.status, oneBody.error?.field], JSON.stringify(extra)).toEqual([400, field]);
        const batch = await f.post('/webhooks/hostile/enqueue/batch', { webhooks: [{ endpoint: ep, payload: {} }, item] });
        const batchBody = (await batch.json()) as any;
        expect([batch.status, batchBody.error?.field], JSON.stringify(extra)).toEqual([400, `webhooks.1.${field}`]);
      }
      for (const secret of SECRETS) {
        const res = await fetch(`${f.baseUrl}/configs/hostile/secret`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ secret }) });
        expect([res.status, ((await res.json()) as any).error?.field], secret).toEqual([400, 'secret']);
      }
      // A good webhook last: once it is on the topic, anything accepted before it would be too.
      expect((await f.post('/webhooks/hostile/enqueue', { endpoint: ep, payload: {}, headers: { 'X-Latin1': 'caf\u00e9 \u00ff', 'X-Tab': 'a\tb' } })).status).toBe(202);
      await waitFor(() => f.records('pending').some((r) => r.key === 'hostile'), { what: 'the good webhook on the pending topic' });
      expect(f.records('pending').filter((r) => r.key === 'hostile')).toHaveLength(1);
    } finally {
      await f.stop();
    }
  });
});

// Hand-written hostile cases a spec-driven fuzzer does not reach (it knows no passwords and
// sends no races), on real Kafka + Redis (a db of its own), with API keys on.
describe('hostile cases', () => {
  let f: TestFleet;
  let dir: string;
  let admin: string;
  const basic = (raw: string) => ({ authorization: `Basic ${Buffer.from(raw, 'latin1').toString('base64')}` });
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'howk-hostile-'));
    await writeFile(join(dir, 'guarded.lua'), "assert(howk.post('http://127.0.0.1:9/never', {}))");
    await writeFile(join(dir, 'guarded.passwd'), `alice:${bcrypt.hashSync('right', 10)}\n`);
    f = await startTestFleet('kafka', {
      roles: { api: true, worker: false, scheduler: false },
      overrides: { 'api.auth.enabled': true, 'transformer.script_dirs': [dir], 'transformer.auth_failure_burst': 5 },
    });
    await f.fleet.security!.ready;
    admin = (await f.fleet.security!.keys!.create({ name: 'hostile', scopes: ['admin'] })).key;
  });
  afterAll(async () => {
    await f?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(f.baseUrl + path, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}`, ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('malformed and oversized Basic credentials, then a guessing run with spoofed X-Forwarded-For: only 401/429, never 5xx, nothing accepted', async () => {
    const creds = ['alice', 'alice:', ':', 'alice:wrong', 'alice:' + 'x'.repeat(10_000), 'nobody:right', 'al\u00ffce:r\u00e9ght', 'alice:right:extra', '\u0000:\u0000'];
    const statuses: number[] = [];
    for (const [i, c] of creds.entries()) {
      const res = await fetch(`${f.baseUrl}/incoming/guarded`, { method: 'POST', body: '{}', headers: { ...basic(c), 'x-forwarded-for': `198.51.100.${i}` } });
      statuses.push(res.status);
      expect(((await res.json()) as any).error.code).toMatch(/^(unauthorized|rate_limited)$/);
    }
    for (const h of ['Basic', 'Basic !!!', 'Basic ' + 'A'.repeat(8000), 'Bearer x', 'basic YWxpY2U6cmlnaHQ']) {
      const res = await fetch(`${f.baseUrl}/incoming/guarded`, { method: 'POST', body: '{}', headers: { authorization: h } });
      statuses.push(res.status);
    }
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    // The burst is 5 failures: the guessing run met 429 whatever X-Forwarded-For said.
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1);
    expect(f.records('pending')).toHaveLength(0);
  });

  it('POST /keys with config_ids: [] is refused (400, field named), no key made', async () => {
    const res = await call('POST', '/keys', { scopes: ['enqueue'], config_ids: [] });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).error).toMatchObject({ field: 'config_ids' });
  });

  it('resume storms on paused and unpaused scopes all answer, and the scope ends unpaused', async () => {
    const hash = await endpointHash('http://127.0.0.1:9/hostile');
    const ops = Array.from({ length: 12 }, (_, i) => call('POST', `/endpoints/${hash}/${i % 3 === 0 ? 'pause' : 'resume'}`));
    ops.push(call('POST', '/configs/hostile-cfg/resume'), call('POST', '/configs/hostile-cfg/resume'));
    const answers = await Promise.all(ops);
    expect(answers.map((r) => r.status).every((s) => s === 200)).toBe(true);
    expect(((await (await call('POST', `/endpoints/${hash}/resume`)).json()) as any).paused).toBe(false);
    expect((await (await call('GET', `/endpoints/${hash}`)).json()) as any).toMatchObject({ paused: false, draining: false });
  });

  it('secrets in endpoint URLs and oddly-cased secret header names never show in status or listing', async () => {
    const res = await call('POST', '/webhooks/hostile-red/enqueue', {
      endpoint: 'http://us%65r:p%40ss-777@127.0.0.1:9/x?API_KEY=k-777&Sig=s-777',
      payload: {},
      headers: { 'x-AUTH-token': 'h-777', 'X-SeSSion': 'h-778' },
    });
    expect(res.status).toBe(202);
    const { webhook_id } = (await res.json()) as any;
    const shown = [await (await call('GET', `/webhooks/${webhook_id}/status`)).text(), await (await call('GET', '/webhooks?config_id=hostile-red')).text()].join('\n');
    expect(shown).toContain(webhook_id);
    expect(shown).not.toMatch(/777|778|p%40ss|us%65r/);
  });
});
