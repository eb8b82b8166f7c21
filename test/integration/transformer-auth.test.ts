import bcrypt from 'bcryptjs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic } from '../helpers/basic-auth';
import { waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';

// Basic auth of /incoming transformers with bcrypt passwd entries (docs/LUA.md), on real Kafka +
// Redis (a db of its own): right and wrong passwords, an unreadable or malformed passwd file refuses
// every request, every refusal is a 401 with WWW-Authenticate and enqueues nothing.

describe('/incoming Basic auth with bcrypt entries (kafka)', () => {
  let f: TestFleet;
  let rx: Receiver;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'howk-tauth-'));
    const post = (name: string) => `assert(howk.post(request.payload.base .. '/${name}', { who = request.payload.who }))`;
    // Cost 10 (the common default) for one user, $2y$ (PHP's htpasswd) for another, plaintext for a third.
    const files: Record<string, string> = {
      'vault.lua': post('vault'),
      'vault.passwd': `# mixed entries\nalice:${bcrypt.hashSync('correct horse', 10)}\ncarol:${bcrypt.hashSync('battery staple', 6).replace('$2b$', '$2y$')}\ndave:plain-text-pass\n`,
      'locked.lua': post('locked'),
      'mangled.lua': post('mangled'),
      // A truncated bcrypt hash: the file cannot be parsed, so the script refuses everything.
      'mangled.passwd': 'alice:$2b$10$tooShort\nbob:fine\n',
    };
    for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text);
    await mkdir(join(dir, 'locked.passwd')); // exists but cannot be read as a file (EISDIR)
    rx = await startReceiver();
    f = await startTestFleet('kafka', { overrides: { 'transformer.script_dirs': [dir] } });
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const base = () => rx.url('').replace(/\/$/, '');
  const expect401 = async (res: Response, msg: RegExp) => {
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm="howk incoming [a-z]+"/);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'unauthorized', message: expect.stringMatching(msg) });
  };

  it('accepts the right password of a bcrypt user and delivers', async () => {
    const res = await f.post('/incoming/vault', { base: base(), who: 'alice' }, basic('alice', 'correct horse'));
    expect(res.status).toBe(200);
    expect(((await res.json()) as any).count).toBe(1);
    const again = await f.post('/incoming/vault', { base: base(), who: 'carol' }, basic('carol', 'battery staple'));
    expect(again.status).toBe(200);
    const plain = await f.post('/incoming/vault', { base: base(), who: 'dave' }, basic('dave', 'plain-text-pass'));
    expect(plain.status).toBe(200);
    await waitFor(() => rx.received.filter((r) => r.path === '/vault').length >= 3, { what: '3 deliveries' });
    expect(
      rx.received
        .filter((r) => r.path === '/vault')
        .map((r) => JSON.parse(r.body.toString()).who)
        .sort(),
    ).toEqual(['alice', 'carol', 'dave']);
  });

  it('refuses a wrong password, an unknown user and missing credentials with 401 + WWW-Authenticate', async () => {
    await expect401(await f.post('/incoming/vault', { base: base(), who: 'x1' }, basic('alice', 'correct horsE')), /invalid credentials/);
    await expect401(await f.post('/incoming/vault', { base: base(), who: 'x2' }, basic('carol', '')), /invalid credentials/);
    await expect401(await f.post('/incoming/vault', { base: base(), who: 'x3' }, basic('mallory', 'correct horse')), /invalid credentials/);
    // A near miss of a plaintext password.
    await expect401(await f.post('/incoming/vault', { base: base(), who: 'x4' }, basic('dave', 'plain-text-pas')), /invalid credentials/);
    await expect401(await f.post('/incoming/vault', { base: base(), who: 'x5' }), /required/);
  });

  it('refuses every request when the passwd file is unreadable or malformed', async () => {
    for (const name of ['locked', 'mangled']) {
      for (const headers of [{}, basic('alice', 'correct horse'), basic('bob', 'fine')]) {
        await expect401(await f.post(`/incoming/${name}`, { base: base(), who: name }, headers), /refuses every request|required/);
      }
    }
  });

  it('enqueued nothing for any refused request', async () => {
    // A marker delivery after the refusals proves the pipeline had time to deliver them.
    expect((await f.post('/incoming/vault', { base: base(), who: 'marker' }, basic('alice', 'correct horse'))).status).toBe(200);
    await waitFor(() => rx.received.some((r) => r.body.toString().includes('marker')), { what: 'marker' });
    const pending = f.records('pending').map((r) => JSON.parse(r.value!).payload.who);
    expect(pending.sort()).toEqual(['alice', 'carol', 'dave', 'marker']);
    expect(rx.received.filter((r) => r.path !== '/vault')).toHaveLength(0);
  });
});
