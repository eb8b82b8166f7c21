import { CREDENTIAL_KEY_ENV } from '../lua/credentials';
import { derivedEnvName, type Leaf, type SchemaTree } from './leaves';
import { REMOVED_KEYS } from './removed';

// One reader of HOWK_* variables for every process, the edge's Worker bindings included.

export type ConfigIssue = { path: string; message: string };
export type EnvValue = { leaf: Leaf; name: string; value: unknown };

const parse = (leaf: Leaf, raw: string): unknown => {
  switch (leaf.meta.kind) {
    case 'list':
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    case 'map': {
      const t = raw.trim();
      if (t.startsWith('{')) return JSON.parse(t);
      return Object.fromEntries(
        t
          .split(',')
          .filter(Boolean)
          .map((kv) => kv.split(':').map((x) => x.trim())),
      );
    }
    default:
      return raw;
  }
};

const given = (env: Record<string, string | undefined>, name: string): string | undefined => {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
};

/** The value of each leaf set in `env`, under its canonical name or a former one. */
export const readEnv = (leaves: readonly Leaf[], env: Record<string, string | undefined>): { values: EnvValue[]; issues: ConfigIssue[] } => {
  const values: EnvValue[] = [];
  const issues: ConfigIssue[] = [];
  for (const leaf of leaves) {
    const set = [leaf.env, ...leaf.aliases].filter((n) => given(env, n) !== undefined);
    if (!set.length) continue;
    const name = set[0]!;
    const raw = given(env, name)!;
    const clash = set.find((n) => given(env, n) !== raw);
    if (clash) {
      issues.push({ path: leaf.key, message: `${name} and ${clash} both set ${leaf.key}, to different values; keep ${leaf.env} only` });
      continue;
    }
    try {
      values.push({ leaf, name, value: parse(leaf, raw) });
    } catch {
      issues.push({ path: leaf.key, message: `${name}: cannot read ${leaf.meta.secret ? 'its value' : JSON.stringify(raw)}` });
    }
  }
  return { values, issues };
};

/**
 * HOWK_<SECTION>_* variables that are no setting: a typo there would otherwise leave the
 * default in force without a word. Names outside the sections' prefixes are left alone, and
 * so are the Lua credential keys (HOWK_LUA_CRYPTO_<ID>) and `exempt` (variables the config
 * itself names, such as lua.secret_env_allowlist or a transformer's secrets).
 */
export const unknownEnvIssues = (tree: SchemaTree, env: Record<string, string | undefined>, exempt: ReadonlySet<string>): ConfigIssue[] => {
  const known = new Set(tree.leaves.flatMap((l) => [l.env, ...l.aliases]));
  const renamed = new Map(tree.leaves.filter((l) => l.env !== derivedEnvName(l.path)).map((l) => [derivedEnvName(l.path), l]));
  const removed = new Map(Object.keys(REMOVED_KEYS).map((k) => [derivedEnvName(k.split('.')), k]));
  const tops = [...tree.sections].filter((s) => !s.includes('.'));
  const issues: ConfigIssue[] = [];
  for (const name of Object.keys(env)) {
    if (!name.startsWith('HOWK_') || env[name] === undefined || known.has(name) || exempt.has(name) || name.startsWith(CREDENTIAL_KEY_ENV)) continue;
    const section = tops.find((s) => name.startsWith(`${derivedEnvName([s])}_`));
    if (!section) continue;
    const gone = removed.get(name);
    if (gone) {
      issues.push({ path: gone, message: `${name} (${gone}) is ${REMOVED_KEYS[gone]}` });
      continue;
    }
    const guess = `${section}.${name.slice(derivedEnvName([section]).length + 1).toLowerCase()}`;
    const elsewhere = renamed.get(name);
    const hint = elsewhere ? `; ${elsewhere.key} is read from ${elsewhere.env}` : '; docs/CONFIG.md lists the settings';
    issues.push({ path: guess, message: `${name} is not a setting (no key ${guess})${hint}` });
  }
  return issues;
};
