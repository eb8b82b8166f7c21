import { parse as parseYaml } from 'yaml';
import { ValidationError } from '../errors/errors';
import { signingSecretProblem } from '../domain/secret-format';
import { readEnv, unknownEnvIssues, type ConfigIssue } from './env';
import { formatDuration } from './fields';
import { configLeaves, leafOf, schemaTree, type Leaf } from './leaves';
import { REMOVED_KEYS } from './removed';
import { ConfigSchema, type Config } from './schema';

export { configLeaves, type Leaf } from './leaves';

const getPath = (obj: unknown, path: readonly string[]): unknown => path.reduce<any>((o, k) => (o == null || typeof o !== 'object' ? undefined : o[k]), obj);

const setPath = (obj: Record<string, any>, path: string[], value: unknown) => {
  let cur = obj;
  for (const k of path.slice(0, -1)) {
    if (typeof cur[k] !== 'object' || cur[k] === null) cur[k] = {};
    cur = cur[k];
  }
  cur[path[path.length - 1]!] = value;
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keys of a file (or overrides) that are no setting; a leaf's own value (a map) is not looked into. */
const unknownKeyIssues = (raw: unknown, what: string): ConfigIssue[] => {
  const { byKey, sections } = schemaTree();
  const issues: ConfigIssue[] = [];
  const walk = (o: Record<string, unknown>, path: string[]) => {
    for (const [k, v] of Object.entries(o)) {
      const key = [...path, k].join('.');
      if (byKey.has(key)) continue;
      if (sections.has(key)) {
        if (isRecord(v)) walk(v, [...path, k]);
        continue;
      }
      const why = REMOVED_KEYS[key];
      issues.push({ path: key, message: why ? `${key} is ${why}` : `${key} is not a setting (unknown key in ${what}; docs/CONFIG.md lists the settings)` });
    }
  };
  if (isRecord(raw)) walk(raw, []);
  return issues;
};

/** Where a key's value came from, when not from the defaults; the later source wins. */
export type ConfigSource = 'file' | 'env' | 'flag';

/** The config, and which keys (leaf paths such as `api.auth.enabled`) the user set and how. */
export type LoadedConfig = { config: Config; sources: Record<string, ConfigSource> };

export type LoadInput = {
  yaml?: string;
  env?: Record<string, string | undefined>;
  overrides?: Record<string, unknown>;
  /** HOWK_* variables that belong to something else (e.g. secrets a transformer names). */
  otherEnv?: readonly string[];
};

// Each issue's message names its key or variable itself.
const invalid = (issues: ConfigIssue[]): ValidationError => new ValidationError(`invalid config: ${issues.map((i) => i.message).join('; ')}`, issues[0]?.path, issues);

/** Defaults < YAML file < HOWK_* env < explicit overrides (flags), with the keys each one set. */
export const loadConfigWithSources = (input: LoadInput = {}): LoadedConfig => {
  const leaves = configLeaves();
  const parsed: unknown = input.yaml ? parseYaml(input.yaml) : undefined;
  const raw: Record<string, any> = isRecord(parsed) ? parsed : {};
  const issues: ConfigIssue[] =
    parsed === undefined || parsed === null || isRecord(parsed)
      ? unknownKeyIssues(parsed, 'the config file')
      : [{ path: '', message: 'the config file must be a mapping of sections (api:, kafka:, ...)' }];
  const sources: Record<string, ConfigSource> = {};
  for (const l of leaves) if (getPath(raw, l.path) !== undefined) sources[l.key] = 'file';

  const env = input.env ?? {};
  const fromEnv = readEnv(leaves, env);
  issues.push(...fromEnv.issues);
  const envNames = new Map<string, string>();
  for (const { leaf, name, value } of fromEnv.values) {
    setPath(raw, leaf.path, value);
    sources[leaf.key] = 'env';
    envNames.set(leaf.key, name);
  }

  const overrides = Object.entries(input.overrides ?? {}).filter(([, v]) => v !== undefined);
  for (const [dotted, v] of overrides) {
    if (!schemaTree().sections.has(dotted) && !leafOf(dotted.split('.'))) issues.push({ path: dotted, message: `${dotted} is not a setting (override)` });
    setPath(raw, dotted.split('.'), v);
    for (const l of leaves) if ((l.key === dotted || l.key.startsWith(`${dotted}.`)) && getPath(raw, l.path) !== undefined) sources[l.key] = 'flag';
  }
  if (issues.length) throw invalid(issues);

  const res = ConfigSchema.safeParse(raw);
  if (!res.success) {
    throw invalid(
      res.error.issues.map((i) => {
        const path = i.path.map(String).join('.');
        const leaf = leafOf(i.path as (string | number)[]);
        const name = leaf && sources[leaf.key] === 'env' ? envNames.get(leaf.key) : undefined;
        return { path, message: `${path}${name ? ` (${name})` : ''}: ${i.message}` };
      }),
    );
  }
  // A default secret that cannot sign would dead-letter every webhook without one of its own.
  const secret = res.data.signing.default_secret;
  const problem = secret === undefined ? undefined : signingSecretProblem(secret);
  if (problem) throw new ValidationError(`invalid config: signing.default_secret: ${problem}`, 'signing.default_secret');
  const unknownEnv = unknownEnvIssues(schemaTree(), env, new Set([...res.data.lua.secret_env_allowlist, ...(input.otherEnv ?? [])]));
  if (unknownEnv.length) throw invalid(unknownEnv);
  return { config: res.data, sources };
};

/** Defaults < YAML file < HOWK_* env < explicit overrides (flags). */
export const loadConfig = (input: LoadInput = {}): Config => loadConfigWithSources(input).config;

/** The Markdown table of docs/CONFIG.md. */
export const configDocsTable = (): string => {
  const defaults = ConfigSchema.parse({}) as Record<string, any>;
  const fmt = (leaf: Leaf, v: unknown): string => {
    if (v === undefined) return '(unset)';
    if (v === '') return '(empty)';
    if (leaf.meta.kind === 'duration') return formatDuration(v as number);
    if (Array.isArray(v)) return v.length ? v.join(',') : '[]';
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  };
  const also = (l: Leaf) => (l.aliases.length ? ` (also read from ${l.aliases.map((a) => `\`${a}\``).join(', ')}, its former name)` : '');
  const rows = configLeaves().map(
    (l) =>
      `| \`${l.key}\` | \`${l.env}\` | ${l.meta.kind} | \`${fmt(l, getPath(defaults, l.path))}\` | ${l.meta.description}${also(l)}${l.meta.secret ? ' (secret: never logged)' : ''} |`,
  );
  return ['| key | env | type | default | description |', '|---|---|---|---|---|', ...rows].join('\n');
};
