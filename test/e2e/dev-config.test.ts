import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/env';
import { freePort, spawnRole, stopProc, type Proc } from '../helpers/procs';

// howk-dev's own defaults (no API keys) give way to a config file that sets the key, which
// the loader reports; keys that are no setting stop it with their name. Loopback only; no
// Kafka or Redis.

describe('howk-dev configuration (process)', () => {
  let dir: string;
  const procs: Proc[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'howk-dev-config-'));
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => stopProc(p)));
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (yaml: string | undefined, env: Record<string, string> = {}) => {
    const port = await freePort();
    // Not the default ./.howk (one process per data folder): these runs keep nothing.
    const args: string[] = ['--memory'];
    if (yaml !== undefined) {
      const file = join(dir, `howk-${port}.yaml`);
      await writeFile(file, yaml);
      args.push('--config', file);
    }
    const p = spawnRole('dev', { HOWK_API_PORT: String(port), HOWK_API_HOST: '127.0.0.1', ...env }, args);
    procs.push(p);
    return { p, base: `http://127.0.0.1:${port}` };
  };
  const ready = (p: Proc, base: string) =>
    waitFor(async () => (await fetch(`${base}/ready`).catch(() => undefined))?.status === 200, { timeoutMs: 60_000, what: `howk-dev ready\n${p.output()}` });

  it('without a setting, API keys are off; a config file that turns them on is obeyed', async () => {
    const open = await start(undefined);
    const locked = await start('api:\n  auth:\n    enabled: true\n');
    await Promise.all([ready(open.p, open.base), ready(locked.p, locked.base)]);
    expect((await fetch(`${open.base}/webhooks/nope/status`)).status).not.toBe(401);
    expect((await fetch(`${locked.base}/webhooks/nope/status`)).status).toBe(401);
    expect(locked.p.output()).toContain('admin key for this run');
  });

  it.each([
    [undefined, { HOWK_RETRY_MAX_ATEMPTS: '3' }, 'HOWK_RETRY_MAX_ATEMPTS is not a setting'],
    ['redis:\n  pool_size: 10\n', {}, 'redis.pool_size is removed'],
  ])('refuses to start on a key that is no setting (file %j, env %j)', async (yaml, env, message) => {
    const { p } = await start(yaml, env);
    const code = await Promise.race([p.exited, new Promise<'running'>((r) => setTimeout(() => r('running'), 60_000))]);
    expect(code).not.toBe(0);
    expect(code).not.toBe('running');
    expect(p.output()).toContain(message);
  });
});
