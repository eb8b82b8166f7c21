import { mkdtemp, rm, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';

// Who can reach howk-dev (docs/SECURITY.md, "The dev server: safe where it runs"): the
// binary as a process, with no HOWK_API_HOST (the other process tests set it). It listens on
// loopback by default, refuses an open address with API keys off unless told
// --insecure-open, and its banner says where it listens and what is open. Every request goes
// to this machine; no Kafka or Redis.

/** An IPv4 address of this machine that is not loopback, if it has one. */
const ownAddress = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

/** Whether a TCP connection to host:port is accepted (this machine's own addresses only). */
const accepts = (host: string, port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = connect({ host, port, timeout: 2000 });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
  });

type Banner = { listening_on: string; reachable_from: string; api_auth: string; loopback_destinations: string; console: string };

describe('howk-dev: where it listens and what is open (process)', () => {
  let dir: string;
  const procs: Proc[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'howk-dev-exposure-'));
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => stopProc(p)));
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (args: string[], env: Record<string, string> = {}) => {
    const port = await freePort();
    const p = spawnRole('dev', { HOWK_API_PORT: String(port), HOWK_LOG_LEVEL: 'info', ...env }, [...args]);
    procs.push(p);
    return { p, port, base: `http://127.0.0.1:${port}` };
  };
  const banner = (p: Proc): Promise<Banner> =>
    waitFor(
      () => {
        const line = p
          .output()
          .split('\n')
          .find((l) => l.includes('"howk-dev ready"'));
        return line ? (JSON.parse(line) as Banner) : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100, what: `howk-dev ready\n${p.output()}` },
    );
  const exitOf = (p: Proc) => Promise.race([p.exited, new Promise<'running'>((r) => setTimeout(() => r('running'), 60_000))]);

  it('listens on 127.0.0.1 by default, says so, and will not mint API keys while they are off', async () => {
    const { p, port, base } = await start(['--memory']);
    const b = await banner(p);
    expect(b.listening_on).toBe(`http://127.0.0.1:${port}`);
    expect(b.reachable_from).toMatch(/^this machine only/);
    expect(b.api_auth).toMatch(/^off/);
    expect(b.loopback_destinations).toMatch(/^reachable/);
    expect(await accepts('127.0.0.1', port)).toBe(true);
    if (ownAddress) expect(await accepts(ownAddress, port), `${ownAddress}:${port} must refuse`).toBe(false);

    const res = await fetch(`${base}/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'x', scopes: ['admin'] }) });
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('auth_disabled');
    expect(await (await fetch(`${base}/keys`)).json()).toEqual({ keys: [] });
  });

  it.each([
    ['--host 0.0.0.0', ['--host', '0.0.0.0'], {}],
    ['HOWK_API_HOST=0.0.0.0', [], { HOWK_API_HOST: '0.0.0.0' }],
  ])('refuses to start on an open address with API keys off (%s): exit 1 and one line saying why and how', async (_what, args, env) => {
    const { p } = await start(['--memory', ...args], env);
    expect(await exitOf(p)).toBe(1);
    const lines = p.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^howk-dev: refusing to listen on 0\.0\.0\.0 with API keys off: .*--host 127\.0\.0\.1.*HOWK_API_AUTH_ENABLED=true.*--insecure-open/);
  });

  it('starts on 0.0.0.0 with --insecure-open and says that everything is open', async () => {
    const { p, port } = await start(['--memory', '--host', '0.0.0.0', '--insecure-open']);
    const b = await banner(p);
    expect(b.listening_on).toBe(`http://0.0.0.0:${port}`);
    expect(b.reachable_from).toMatch(/^every network interface/);
    expect(b.api_auth).toMatch(/^OFF on an open address \(--insecure-open\)/);
    expect(b.loopback_destinations).toMatch(/^reachable/);
    expect(p.output()).not.toMatch(/localhost/);
    // The check of the default run above is not vacuous: this address reaches an open server.
    if (ownAddress) expect(await accepts(ownAddress, port)).toBe(true);
  });

  it('starts on 0.0.0.0 with API keys on (the container default): prints an admin key, keeps its folder private', async () => {
    const data = join(dir, 'data');
    const { p, port, base } = await start(['--data', data, '--host', '0.0.0.0'], { HOWK_API_AUTH_ENABLED: 'true', HOWK_DELIVERY_ALLOWED_NETWORKS: '10.9.8.0/24' });
    const b = await banner(p);
    expect(b.listening_on).toBe(`http://0.0.0.0:${port}`);
    const key = /^on; admin key for this run: (howk_\S+)$/.exec(b.api_auth)?.[1];
    expect(key).toBeTruthy();
    expect(b.loopback_destinations).toBe('refused (10.9.8.0/24 allowed besides public addresses)');
    expect((await fetch(`${base}/keys`)).status).toBe(401);
    expect((await fetch(`${base}/keys`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    expect((await stat(data)).mode & 0o777).toBe(0o700);
    expect((await stat(join(data, 'howk.db'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(data, 'secrets.json'))).mode & 0o777).toBe(0o600);
  });
});
