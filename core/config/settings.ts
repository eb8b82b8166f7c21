import { z } from 'zod';
import { ValidationError } from '../errors/errors';
import type { LeafMeta } from './fields';

// Settings of one process kind that sit beside the shared schema (howk-bridge, the edge):
// a flat shape of core/config/fields leaves, read from env with the same rules as HOWK_*.

export const settingsEnvName = (prefix: string, key: string, schema: z.ZodType): string =>
  (schema.meta() as LeafMeta | undefined)?.env ?? `${prefix}${key.toUpperCase()}`;

export const loadSettings = <S extends z.ZodRawShape>(shape: S, prefix: string, env: Record<string, unknown>): z.infer<z.ZodObject<S>> => {
  const raw: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(shape)) {
    const v = env[settingsEnvName(prefix, key, schema as z.ZodType)];
    if (typeof v !== 'string' || v === '') continue;
    const kind = ((schema as z.ZodType).meta() as LeafMeta | undefined)?.kind;
    try {
      raw[key] = kind === 'list' ? v.split(',').map((s) => s.trim()).filter(Boolean) : kind === 'map' ? JSON.parse(v) : v;
    } catch {
      throw new ValidationError(`${settingsEnvName(prefix, key, schema as z.ZodType)}: cannot read ${JSON.stringify(v)}`, key);
    }
  }
  const res = z.object(shape).safeParse(raw);
  if (!res.success) {
    const i = res.error.issues[0]!;
    const key = String(i.path[0] ?? '');
    throw new ValidationError(`invalid settings: ${key && shape[key] ? settingsEnvName(prefix, key, shape[key] as z.ZodType) : key}: ${i.message}`, i.path.join('.'));
  }
  return res.data;
};
