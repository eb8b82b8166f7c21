import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { requireEnv, waitFor } from '../helpers/env';
import { startTestFleet } from '../helpers/fleet';

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
  const HOP = ['Connection', 'keep-alive', 'UPGRADE', 'Expect', 'Transfer-Encoding', 'te', 'Trailer', 'Proxy-Connection', 'Host', 'content-length', 'Proxy-Authorization', 'HTTP2-Settings'];
  const NAMES = ['Bad Name', 'x:y', 'x\u00e9', '(x)', 'x/y', 'a\u0000'];
  const SECRETS = ['whsec_AA', 'whsec_!!!!', 'whsec_AAAAAAAAAAAAAAAAAAAA', 'whsec_ AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', `whsec_${'A'.repeat(20)}===`, `whsec_${Buffer.alloc(24).toString('base64url')}-_`];

  it('are all refused with 400 naming the field; nothing is enqueued', async () => {
    const f = await startTestFleet('kafka', { redisDb: 54, roles: { api: true, worker: false, scheduler: false } });
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
