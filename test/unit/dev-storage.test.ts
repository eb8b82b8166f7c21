import { mkdtempSync, rmSync, statSync } from 'node:fs';
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
});
