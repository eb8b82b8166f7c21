import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { MemoryLog } from '../../core/memory/log';
import type { Log } from '../../core/ports/log';
import { toBase64 } from '../../core/signing/encoding';
import { randomSecretsKey } from '../../core/signing/secret-box';
import { SqliteLog } from '../sqlite/log';

// Where howk-dev keeps what it accepted (docs/RELIABILITY.md, "The embedded mode"): the log
// in <data>/howk.db (SQLite), and the secrets it generates for itself in <data>/secrets.json
// so that webhooks sealed or signed before a restart still open and verify after it. The hot
// state and guards stay in memory and are rebuilt from the log at every start.
// The log holds every payload and header in clear, so the folder is the owner's alone: 0700,
// its files 0600, looser modes left by an earlier version tightened at start.

export const DEFAULT_DATA_DIR = '.howk';

export type DevArgs = { rest: string[]; data: string; memory: boolean };

/** Takes howk-dev's own flags (--data DIR, --memory) out of argv; the rest go to the common parser. */
export const parseDevArgs = (argv: string[]): DevArgs => {
  const rest: string[] = [];
  let data: string | undefined;
  let memory = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--memory') memory = true;
    else if (a === '--data' || a.startsWith('--data=')) {
      data = a === '--data' ? argv[++i] : a.slice('--data='.length);
      if (!data || data.startsWith('--')) throw new Error('--data needs a folder: --data DIR');
    } else rest.push(a);
  }
  if (memory && data) throw new Error('--memory and --data exclude each other');
  return { rest, data: resolve(data ?? DEFAULT_DATA_DIR), memory };
};

export type DevSecrets = { signing_secret: string; secrets_key: string };

/** The secrets of this data folder, generated on its first start. */
const folderSecrets = (dir: string): DevSecrets => {
  const file = join(dir, 'secrets.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as DevSecrets;
  const made: DevSecrets = { signing_secret: `whsec_${toBase64(crypto.getRandomValues(new Uint8Array(24)))}`, secrets_key: randomSecretsKey() };
  writeFileSync(file, `${JSON.stringify(made, null, 2)}\n`, { mode: 0o600 });
  return made;
};

export type DevStorage = { logStore: Log; secrets: DevSecrets; persistent: boolean; describe: string; tightened: string[] };

const DIR_MODE = 0o700;
const FILE_MODE = 0o600;
/** The files SQLite keeps beside the log; it gives -wal and -shm the mode of the database file. */
const DB_FILES = ['howk.db', 'howk.db-wal', 'howk.db-shm', 'secrets.json'];

/** Takes group and other bits off a path; says what it changed. */
const tighten = (path: string, mode: number): string | undefined => {
  const was = statSync(path).mode & 0o777;
  if ((was & ~mode) === 0) return undefined;
  try {
    chmodSync(path, was & mode);
  } catch (e) {
    throw new Error(`cannot make ${path} private (mode ${mode.toString(8)}): ${e instanceof Error ? e.message : String(e)}; use a folder of your own (--data DIR)`);
  }
  return `${path} ${was.toString(8)} -> ${(was & mode).toString(8)}`;
};

/** The data folder 0700 and its files 0600, the database created 0600 before SQLite opens it. */
export const privateDataDir = (dir: string): string[] => {
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  const changed = [tighten(dir, DIR_MODE)];
  for (const f of DB_FILES) if (existsSync(join(dir, f))) changed.push(tighten(join(dir, f), FILE_MODE));
  const db = join(dir, 'howk.db');
  if (!existsSync(db)) closeSync(openSync(db, 'a', FILE_MODE));
  return changed.filter((c): c is string => c !== undefined);
};

export const openDevStorage = (args: DevArgs): DevStorage => {
  if (args.memory) {
    const secrets = { signing_secret: `whsec_${toBase64(crypto.getRandomValues(new Uint8Array(24)))}`, secrets_key: randomSecretsKey() };
    return { logStore: new MemoryLog(), secrets, persistent: false, describe: 'in memory (--memory): nothing persists', tightened: [] };
  }
  const tightened = privateDataDir(args.data);
  const log = new SqliteLog({ path: join(args.data, 'howk.db'), synchronous: 'FULL' });
  return {
    logStore: log,
    secrets: folderSecrets(args.data),
    persistent: true,
    describe: `${join(args.data, 'howk.db')} (SQLite; delete the folder to start afresh)`,
    tightened,
  };
};
