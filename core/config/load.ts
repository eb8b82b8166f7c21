import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { ValidationError } from '../errors/errors';
import { signingSecretProblem } from '../signing/secret-format';
import { formatDuration, type LeafMeta } from './fields';
import { ConfigSchema, type Config } from './schema';

export type Leaf = { path: string[]; env: string; meta: LeafMeta; schema: z.ZodType };

const defOf = (s: z.ZodType): any => (s as any)._zod.def;

/** Every leaf of the schema with its env name, in declaration order. */
export const configLeaves = (): Leaf[] => {
  const out: Leaf[] = [];
  const walk = (shape: Record<string, z.ZodType>, path: string[]) => {
    for (const [key, schema] of Object.entries(shape)) {
      const p = [...path, key];
      const def = defOf(schema);
      if (def.type === 'prefault' && defOf(def.innerType).type === 'object') {
        walk(defOf(def.innerType).shape, p);
        continue;
      }
      const meta = schema.meta() as LeafMeta | undefined;
      if (!meta) throw new Error(`config leaf ${p.join('.')} has no metadata`);
      out.push({ path: p, env: meta.env ?? `HOWK_${p.join('_').toUpperCase()}`, meta, schema });
    }
  };
  walk(ConfigSchema.shape as unknown as Record<string, z.ZodType>, []);
  return out;
};

const fromEnv = (leaf: Leaf, raw: string): unknown => {
  switch (leaf.meta.kind) {
    case 'list':
      return raw.split(',').map((s) => s.trim()).filter(Boolean);
    case 'map': {
      const t = raw.trim();
      if (t.startsWith('{')) return JSON.parse(t);
      return Object.fromEntries(t.split(',').filter(Boolean).map((kv) => kv.split(':').map((x) => x.trim())));
    }
    default:
      return raw;
  }
};

const setPath = (obj: Record<string, any>, path: string[], value: unknown) => {
  let cur = obj;
  for (const k of path.slice(0, -1)) {
    if (typeof cur[k] !== 'object' || cur[k] === null) cur[k] = {};
    cur = cur[k];
  }
  cur[path[path.length - 1]!] = value;
};

export type LoadInput = { yaml?: string; env?: Record<string, string | undefined>; overrides?: Record<string, unknown> };

/** Defaults < YAML file < HOWK_* env < explicit overrides (flags). */
export const loadConfig = (input: LoadInput = {}): Config => {
  const raw: Record<string, any> = input.yaml ? ((parseYaml(input.yaml) as Record<string, any>) ?? {}) : {};
  const env = input.env ?? {};
  for (const leaf of configLeaves()) {
    const v = env[leaf.env];
    if (v === undefined || v === '') continue;
    try {
      setPath(raw, leaf.path, fromEnv(leaf, v));
    } catch {
      throw new ValidationError(`${leaf.env}: cannot read ${JSON.stringify(v)}`, leaf.path.join('.'));
    }
  }
  for (const [dotted, v] of Object.entries(input.overrides ?? {})) {
    if (v !== undefined) setPath(raw, dotted.split('.'), v);
  }
  const res = ConfigSchema.safeParse(raw);
  if (!res.success) {
    throw ValidationError.fromZod(res.error, { prefix: 'invalid config: ' });
  }
  // A default secret that cannot sign would dead-letter every webhook without one of its own.
  const secret = res.data.signing.default_secret;
  const problem = secret === undefined ? undefined : signingSecretProblem(secret);
  if (problem) throw new ValidationError(`invalid config: signing.default_secret: ${problem}`, 'signing.default_secret');
  return res.data;
};

/** The Markdown table of docs/CONFIG.md. */
export const configDocsTable = (): string => {
  const defaults = ConfigSchema.parse({}) as Record<string, any>;
  const get = (path: string[]) => path.reduce<any>((o, k) => (o == null ? undefined : o[k]), defaults);
  const fmt = (leaf: Leaf, v: unknown): string => {
    if (v === undefined) return '(unset)';
    if (leaf.meta.kind === 'duration') return formatDuration(v as number);
    if (Array.isArray(v)) return v.length ? v.join(',') : '[]';
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  };
  const rows = configLeaves().map(
    (l) => `| \`${l.path.join('.')}\` | \`${l.env}\` | ${l.meta.kind} | \`${fmt(l, get(l.path))}\` | ${l.meta.description}${l.meta.secret ? ' (secret: never logged)' : ''} |`,
  );
  return ['| key | env | type | default | description |', '|---|---|---|---|---|', ...rows].join('\n');
};
