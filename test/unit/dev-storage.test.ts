import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryLog } from '../../core/memory/log';
import { openDevStorage, parseDevArgs } from '../../workers/dev/storage';
import { SqliteLog } from '../../workers/sqlite/log';

// howk-dev's own flags and its data folder (docs/RELIABILITY.md, "The embedded mode").

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('howk-dev storage', () => {
  it('keeps data in ./.howk by default, --data DIR elsewhere, --memory nowhere; the rest goes to the common flags', () => {
    expect(parseDevArgs(['--port', '9090', '--dry'])).toEqual({ rest: ['--port', '9090', '--dry'], data: resolve('.howk'), memory: false });
    expect(parseDevArgs(['--data', 'x/y', '--dry'])).toEqual({ rest: ['--dry'], data: resolve('x/y'), memory: false });
    expect(parseDevArgs(['--data=/tmp/z']).data).toBe('/tmp/z');
    expect(parseDevArgs(['--memory']).memory).toBe(true);
    expect(() => parseDevArgs(['--data'])).toThrow(/--data needs a folder/);
    expect(() => parseDevArgs(['--data', '--dry'])).toThrow(/--data needs a folder/);
    expect(() => parseDevArgs(['--memory', '--data', 'x'])).toThrow(/exclude each other/);
  });

  it('opens the SQLite log in the folder and keeps its generated secrets across starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'howk-dev-storage-'));
    dirs.push(dir);
    const first = openDevStorage({ rest: [], data: dir, memory: false });
    expect(first.logStore).toBeInstanceOf(SqliteLog);
    expect(first.secrets.signing_secret).toMatch(/^whsec_/);
    await first.logStore.close();
    expect(statSync(join(dir, 'secrets.json')).mode & 0o777).toBe(0o600);
    const second = openDevStorage({ rest: [], data: dir, memory: false });
    expect(second.secrets).toEqual(first.secrets);
    await second.logStore.close();

    const mem = openDevStorage({ rest: [], data: dir, memory: true });
    expect(mem.logStore).toBeInstanceOf(MemoryLog);
    expect(mem.secrets.signing_secret).not.toBe(first.secrets.signing_secret);
  });

  // The log holds payloads and headers in clear: nobody but the owner may read the folder.
  const modes = (dir: string): Record<string, number> =>
    Object.fromEntries([[dir, statSync(dir).mode & 0o777], ...readdirSync(dir).map((f) => [f, statSync(join(dir, f)).mode & 0o777])]);

  it('makes a new data folder 0700 and every file in it 0600 (the SQLite log, its WAL, the secrets)', async () => {
    const parent = mkdtempSync(join(tmpdir(), 'howk-dev-modes-'));
    dirs.push(parent);
    const dir = join(parent, 'data');
    const s = openDevStorage({ rest: [], data: dir, memory: false });
    await s.logStore.producer().send([{ topic: 'howk.pending', key: 'k', value: JSON.stringify({ payload: 'secret' }) }]);
    const seen = modes(dir);
    await s.logStore.close();
    expect(Object.keys(seen)).toEqual(expect.arrayContaining([dir, 'howk.db', 'howk.db-wal', 'secrets.json']));
    for (const [path, mode] of Object.entries(seen)) expect([path, mode.toString(8)]).toEqual([path, path === dir ? '700' : '600']);
    expect(s.tightened).toEqual([]);
  });

  it('tightens a folder and files left readable by others at start, and says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'howk-dev-loose-'));
    dirs.push(dir);
    chmodSync(dir, 0o755);
    for (const f of ['howk.db', 'secrets.json']) {
      const path = join(dir, f);
      if (f === 'secrets.json') writeFileSync(path, JSON.stringify({ signing_secret: `whsec_${'A'.repeat(32)}`, secrets_key: 'B'.repeat(44) }));
      else writeFileSync(path, '');
      chmodSync(path, 0o644);
    }
    mkdirSync(join(dir, 'other'));
    const s = openDevStorage({ rest: [], data: dir, memory: false });
    await s.logStore.close();
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'howk.db')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'secrets.json')).mode & 0o777).toBe(0o600);
    expect(s.tightened).toEqual([`${dir} 755 -> 700`, `${join(dir, 'howk.db')} 644 -> 600`, `${join(dir, 'secrets.json')} 644 -> 600`]);
  });
});
