import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../core/ports/logger';
import { isLoopbackHost } from '../../core/security/address';
import { applyDevDefaults, bindRefusal, devAdminKey, parseBindArgs } from '../../workers/dev/bind';
import { loadProcessConfig, parseFlags } from '../../workers/node/config';
import { startTestFleet } from '../helpers/fleet';

// howk-dev's reading of where to listen (docs/SECURITY.md, "The dev server: safe where it
// runs"): loopback unless a flag, variable or file says otherwise, and an open address with
// API keys off only when told --insecure-open.

const devConfig = (argv: string[], env: Record<string, string> = {}) => {
  const bind = parseBindArgs(argv);
  const { config, sources } = loadProcessConfig(parseFlags(bind.rest), env);
  applyDevDefaults(config, sources);
  return { config, refusal: bindRefusal(config, bind.insecureOpen) };
};

describe('howk-dev: where it listens', () => {
  it('tells loopback addresses from the others', () => {
    for (const h of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', '::ffff:127.0.0.1', 'localhost', 'LOCALHOST']) expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '[::]', '192.0.2.2', '10.0.0.1', 'fd00::2', 'example.com', 'localhost.example.com', '']) expect(isLoopbackHost(h), h).toBe(false);
  });

  it('listens on 127.0.0.1 unless --host, HOWK_API_HOST or the config file names another address', () => {
    expect(devConfig([]).config.api.host).toBe('127.0.0.1');
    expect(devConfig(['--host', '::1']).config.api.host).toBe('::1');
    expect(devConfig([], { HOWK_API_HOST: '0.0.0.0', HOWK_API_AUTH_ENABLED: 'true' }).config.api.host).toBe('0.0.0.0');
    // The flag wins over the variable.
    expect(devConfig(['--host', '127.0.0.2'], { HOWK_API_HOST: '0.0.0.0' }).config.api.host).toBe('127.0.0.2');
    const dir = mkdtempSync(join(tmpdir(), 'howk-dev-bind-'));
    try {
      const file = join(dir, 'howk.yaml');
      writeFileSync(file, 'api:\n  host: 0.0.0.0\n');
      const fromFile = devConfig(['--config', file]);
      expect(fromFile.config.api.host).toBe('0.0.0.0');
      expect(fromFile.refusal).toContain('refusing to listen on 0.0.0.0');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses an address beyond loopback with keys off, unless keys are on or --insecure-open is given', () => {
    expect(devConfig([]).refusal).toBeUndefined();
    expect(devConfig(['--host', '::1']).refusal).toBeUndefined();
    for (const host of ['0.0.0.0', '::', '192.0.2.2', 'example.com']) {
      expect(devConfig(['--host', host]).refusal, host).toContain(`refusing to listen on ${host} with API keys off`);
      expect(devConfig(['--host', host, '--insecure-open']).refusal, host).toBeUndefined();
      expect(devConfig(['--host', host], { HOWK_API_AUTH_ENABLED: 'true' }).refusal, host).toBeUndefined();
    }
    expect(devConfig(['--host', '0.0.0.0']).config.api.auth.enabled).toBe(false);
  });
});

describe('howk-dev with API keys on: the admin key of the run', () => {
  it('names the live keys made before the run (revoked ones left out), then makes a working admin key', async () => {
    const f = await startTestFleet('memory', { roles: { api: true, worker: false, scheduler: false }, overrides: { 'api.auth.enabled': true } });
    try {
      const keys = f.fleet.security!.keys!;
      await f.fleet.security!.ready;
      const lines: string[] = [];
      const log = createLogger('howk-dev', 'info', (l) => lines.push(l));
      const first = await devAdminKey(keys, log);
      expect(lines).toEqual([]);
      const old = await keys.create({ name: 'made-earlier', scopes: ['enqueue'] });
      const gone = await keys.create({ name: 'revoked', scopes: ['admin'] });
      await keys.revoke(gone.id);
      const second = await devAdminKey(keys, log);
      expect(second).not.toBe(first);
      const warned = lines.map((l) => JSON.parse(l) as { msg: string; count: number; newest: string[] });
      expect(warned).toHaveLength(1);
      expect(warned[0]!.count).toBe(2);
      expect(warned[0]!.newest.join(' ')).toContain(`${old.id} (made-earlier, enqueue,`);
      expect(warned[0]!.newest.join(' ')).not.toContain(gone.id);
      expect((await fetch(`${f.baseUrl}/keys`, { headers: { authorization: `Bearer ${second}` } })).status).toBe(200);
    } finally {
      await f.stop();
    }
  });
});
