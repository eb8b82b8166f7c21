import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from '../../core/ports/logger';
import { checkSyntax } from '../../core/lua';
import { CONFIG_ID } from '../../core/domain/config-id';
import { checkTemplates } from '../../core/domain/templates';
import { bcryptVerifier } from './passwords';
import { parsePasswd, TRANSFORMER_NAME, type TransformerAuth, type TransformerRegistry, type TransformerScript, type TransformerSettings } from '../../core/transformers/registry';

export type ReloadableRegistry = TransformerRegistry & {
  /** Re-reads the directories; the new set replaces the old one at once (requests in flight keep theirs). */
  reload(): Promise<{ loaded: string[]; skipped: string[] }>;
  names(): string[];
};

const errCode = (e: unknown) => (e as NodeJS.ErrnoException).code;

const readSettings = async (path: string): Promise<TransformerSettings> => {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if (errCode(e) === 'ENOENT') return {};
    throw new Error(`${path}: ${(e as Error).message}`);
  }
  const v = JSON.parse(text) as Record<string, unknown>;
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${path}: must be a JSON object`);
  const s: TransformerSettings = {};
  if (v.allowed_domains !== undefined) {
    if (!Array.isArray(v.allowed_domains) || !v.allowed_domains.every((x) => typeof x === 'string')) throw new Error(`${path}: allowed_domains must be a list of host names`);
    s.allowed_domains = v.allowed_domains as string[];
  }
  if (v.allowed_hosts !== undefined) {
    if (!Array.isArray(v.allowed_hosts) || !v.allowed_hosts.every((x) => typeof x === 'string' && x.length > 0))
      throw new Error(`${path}: allowed_hosts must be a list of host names`);
    s.allowed_hosts = v.allowed_hosts as string[];
  }
  // HOWK's names: _delivery_headers / _delivery_query_params (templates, not secrets).
  for (const [key, field] of [
    ['_delivery_headers', 'delivery_headers'],
    ['_delivery_query_params', 'delivery_query_params'],
  ] as const) {
    if (v[key] === undefined) continue;
    try {
      s[field] = checkTemplates(v[key], field === 'delivery_headers' ? 'header' : 'query');
    } catch (e) {
      throw new Error(`${path}: ${key}: ${(e as Error).message}`);
    }
  }
  if (v.config_id !== undefined) {
    if (typeof v.config_id !== 'string' || !CONFIG_ID.test(v.config_id)) throw new Error(`${path}: config_id must be 1-128 characters of A-Z a-z 0-9 . _ : -`);
    s.config_id = v.config_id;
  }
  return s;
};

/** A missing passwd file means a public script; one that exists but cannot be read or parsed refuses everything. */
const readAuth = async (path: string, log: Logger): Promise<TransformerAuth> => {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if (errCode(e) === 'ENOENT') return { kind: 'none' };
    log.error('transformer passwd file unreadable: the script refuses every request', { path, error: (e as Error).message });
    return { kind: 'refuse', reason: (e as Error).message };
  }
  try {
    return { kind: 'passwd', users: parsePasswd(text) };
  } catch (e) {
    log.error('transformer passwd file invalid: the script refuses every request', { path, error: (e as Error).message });
    return { kind: 'refuse', reason: (e as Error).message };
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
        const settings = await readSettings(join(dir, `${name}.json`));
        const auth = await readAuth(join(dir, `${name}.passwd`), log);
        // A syntax error is reported now, but the script stays loaded: its requests get a 400 naming the line.
        await checkSyntax(code).catch((e: Error) => log.warn('transformer has a syntax error', { name, error: e.message }));
        if (scripts.has(name)) log.warn('transformer defined twice; the later directory wins', { name, dir });
        scripts.set(name, { name, code, settings, auth });
      } catch (e) {
        log.error('transformer skipped', { dir, file, error: (e as Error).message });
        skipped.push(name);
      }
    }
  }
  return { scripts, skipped };
};

export const transformerRegistry = async (dirs: readonly string[], maxScriptBytes: number, log: Logger): Promise<ReloadableRegistry> => {
  let current = new Map<string, TransformerScript>();
  const reload = async () => {
    const { scripts, skipped } = await loadTransformers(dirs, maxScriptBytes, log);
    current = scripts;
    const loaded = [...scripts.keys()];
    if (dirs.length) log.info('transformers loaded', { dirs, loaded, skipped });
    return { loaded, skipped };
  };
  await reload();
  return { get: (n) => current.get(n), reload, names: () => [...current.keys()], verifyHash: bcryptVerifier() };
};
