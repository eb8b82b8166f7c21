import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from '../../core/ports/logger';
import { checkSyntax } from '../../core/lua';
import { bcryptVerifier } from './passwords';
import { scriptFromFiles, TRANSFORMER_NAME, type TransformerRegistry, type TransformerScript } from '../../core/transformers/registry';
import { secretNamesOf } from '../../core/transformers/settings';

export type ReloadableRegistry = TransformerRegistry & {
  /** Re-reads the directories; the new set replaces the old one at once (requests in flight keep theirs). */
  reload(): Promise<{ loaded: string[]; skipped: string[] }>;
  names(): string[];
};

const errCode = (e: unknown) => (e as NodeJS.ErrnoException).code;

/** A file's text; null when it does not exist; an Error when it exists but cannot be read. */
const readOptional = async (path: string): Promise<string | Error | null> => {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    return errCode(e) === 'ENOENT' ? null : new Error((e as Error).message);
  }
};

export const loadTransformers = async (dirs: readonly string[], maxScriptBytes: number, log: Logger): Promise<{ scripts: Map<string, TransformerScript>; skipped: string[] }> => {
  const scripts = new Map<string, TransformerScript>();
  const skipped: string[] = [];
  for (const dir of dirs) {
    let files: string[];
    try {
      files = await readdir(dir);
    } catch (e) {
      log.error('transformer directory unreadable', { dir, error: (e as Error).message });
      continue;
    }
    for (const file of files.filter((f) => f.endsWith('.lua')).sort()) {
      const name = basename(file, '.lua');
      if (!TRANSFORMER_NAME.test(name)) {
        log.warn('transformer skipped: name must be 1-64 characters of A-Z a-z 0-9 _ -', { dir, file });
        skipped.push(name);
        continue;
      }
      try {
        const code = await readFile(join(dir, file), 'utf8');
        if (Buffer.byteLength(code) > maxScriptBytes) throw new Error(`script is ${Buffer.byteLength(code)} bytes; lua.max_script_bytes is ${maxScriptBytes}`);
        const json = await readOptional(join(dir, `${name}.json`));
        if (json instanceof Error) throw new Error(`${name}.json: ${json.message}`);
        const passwdPath = join(dir, `${name}.passwd`);
        const script = scriptFromFiles({ name, code, json, passwd: await readOptional(passwdPath) }, (reason) =>
          log.error('transformer passwd file unreadable or invalid: the script refuses every request', { path: passwdPath, error: reason }),
        );
        // A syntax error is reported now, but the script stays loaded: its requests get a 400 naming the line.
        await checkSyntax(code).catch((e: Error) => log.warn('transformer has a syntax error', { name, error: e.message }));
        if (scripts.has(name)) log.warn('transformer defined twice; the later directory wins', { name, dir });
        scripts.set(name, script);
      } catch (e) {
        log.error('transformer skipped', { dir, file, error: (e as Error).message });
        skipped.push(name);
      }
    }
  }
  return { scripts, skipped };
};

/**
 * The transformers of `dirs`. Secrets name.json names (`verify.secrets`, `basic_auth_secret`)
 * are variables of this process's environment, read per request; a named one that is unset
 * is warned about at load (its script refuses every request).
 */
export const transformerRegistry = async (
  dirs: readonly string[],
  maxScriptBytes: number,
  log: Logger,
  env: Record<string, string | undefined> = process.env,
): Promise<ReloadableRegistry> => {
  let current = new Map<string, TransformerScript>();
  const reload = async () => {
    const { scripts, skipped } = await loadTransformers(dirs, maxScriptBytes, log);
    current = scripts;
    const loaded = [...scripts.keys()];
    if (dirs.length) log.info('transformers loaded', { dirs, loaded, skipped });
    for (const s of scripts.values())
      for (const v of secretNamesOf(s.settings))
        if (!env[v])
          log.warn(
            'a transformer names a secret that is not set in the environment (a script none of whose verify secrets is set, or whose basic_auth_secret is unset, refuses every request)',
            { transformer: s.name, secret: v },
          );
    return { loaded, skipped };
  };
  await reload();
  return { get: (n) => current.get(n), reload, names: () => [...current.keys()], verifyHash: bcryptVerifier(), secret: (n) => env[n] };
};
