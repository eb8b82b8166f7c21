import { z } from 'zod';

// Leaf builders. Each leaf records its kind in zod metadata so that the env loader
// knows how to read a HOWK_* string and the docs generator can print the default.
export type LeafKind = 'int' | 'int|auto' | 'number' | 'string' | 'bool' | 'duration' | 'list' | 'map' | 'enum';
export type LeafMeta = {
  kind: LeafKind;
  description: string;
  env?: string;
  /** Former env names still read (the canonical name wins when both are set alike). */
  aliases?: string[];
  secret?: boolean;
  example?: string;
};

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "10s", "2m", "168h", "1h30m", "250ms" or a plain number of ms → ms. */
export const parseDuration = (v: string | number): number => {
  if (typeof v === 'number') return v;
  const s = v.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;
  let total = 0;
  let consumed = 0;
  for (const m of s.matchAll(re)) {
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
    consumed += m[0].length;
  }
  if (consumed !== s.length || consumed === 0) throw new Error(`not a duration: ${JSON.stringify(v)}`);
  return total;
};

export const formatDuration = (ms: number): string => {
  for (const [u, n] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms >= n && ms % n === 0) return `${ms / n}${u}`;
  }
  return `${ms}ms`;
};

const meta = <T extends z.ZodType>(schema: T, m: LeafMeta): T => schema.meta(m) as T;

export const int = (def: number, description: string, opts: { min?: number; max?: number; env?: string } = {}) =>
  meta(
    z.coerce
      .number()
      .int()
      .min(opts.min ?? 0)
      .max(opts.max ?? Number.MAX_SAFE_INTEGER)
      .default(def),
    { kind: 'int', description, env: opts.env },
  );

/** `auto` (the default: decided at run time, e.g. from the broker count) or an integer of at least `min`. */
export const intOrAuto = (description: string, opts: { min?: number } = {}) =>
  meta(
    z
      .union([
        z.literal('auto'),
        z.coerce
          .number()
          .int()
          .min(opts.min ?? 0),
      ])
      .default('auto'),
    { kind: 'int|auto', description },
  );

export const num = (def: number, description: string, opts: { min?: number; max?: number } = {}) =>
  meta(
    z.coerce
      .number()
      .min(opts.min ?? 0)
      .max(opts.max ?? Number.MAX_VALUE)
      .default(def),
    { kind: 'number', description },
  );

export const str = (def: string, description: string, opts: { env?: string; aliases?: string[] } = {}) =>
  meta(z.string().default(def), { kind: 'string', description, env: opts.env, aliases: opts.aliases });

export const optStr = (description: string, opts: { env?: string; aliases?: string[]; secret?: boolean } = {}) =>
  meta(z.string().optional(), { kind: 'string', description, env: opts.env, aliases: opts.aliases, secret: opts.secret });

export const bool = (def: boolean, description: string) =>
  meta(z.preprocess((v) => (typeof v === 'string' ? (BOOL_WORDS[v.trim().toLowerCase()] ?? v) : v), z.boolean()).default(def), { kind: 'bool', description });

// Anything else ("ture", "maybe") stays a string and fails validation instead of reading as false.
const BOOL_WORDS: Record<string, boolean> = { '1': true, true: true, yes: true, on: true, '0': false, false: false, no: false, off: false };

/** Milliseconds; accepts "10s"-style strings or numbers of ms. */
export const duration = (def: string, description: string) =>
  meta(
    z
      .union([z.string(), z.number()])
      .transform((v, ctx) => {
        try {
          return parseDuration(v);
        } catch (e) {
          ctx.addIssue({ code: 'custom', message: (e as Error).message });
          return z.NEVER;
        }
      })
      .prefault(def as never),
    { kind: 'duration', description, example: def },
  );

export const list = (def: string[], description: string, opts: { env?: string } = {}) => meta(z.array(z.string()).default(def), { kind: 'list', description, env: opts.env });

export const intList = (def: number[], description: string) => meta(z.array(z.coerce.number().int()).default(def), { kind: 'list', description });

export const intMap = (description: string) => meta(z.record(z.string(), z.coerce.number().int().min(0)).default({}), { kind: 'map', description });

export const oneOf = <const T extends readonly [string, ...string[]]>(values: T, def: T[number], description: string) =>
  meta(z.enum(values).default(def as never), { kind: 'enum', description });

export const section = <T extends z.ZodRawShape>(shape: T) => z.object(shape).prefault({} as never);

/** name → list of strings (JSON in the environment: {"wh":["api.example.com"]}). */
export const listMap = (description: string) => meta(z.record(z.string(), z.array(z.string())).default({}), { kind: 'map', description });

/** name → string (JSON in the environment). */
export const strMap = (description: string) => meta(z.record(z.string(), z.string()).default({}), { kind: 'map', description });
