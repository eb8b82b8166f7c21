import type { z } from 'zod';
import type { LeafMeta } from './fields';
import { ConfigSchema } from './schema';

export type Leaf = { path: string[]; key: string; env: string; aliases: string[]; meta: LeafMeta; schema: z.ZodType };
export type SchemaTree = { leaves: Leaf[]; byKey: Map<string, Leaf>; sections: Set<string> };

const defOf = (s: z.ZodType): any => (s as any)._zod.def;

/** The env name a key gets unless its leaf names another: HOWK_<PATH>. */
export const derivedEnvName = (path: readonly string[]): string => `HOWK_${path.join('_').toUpperCase()}`;

let tree: SchemaTree | undefined;

/** Every leaf of the one schema with its env names, in declaration order, and the section paths. */
export const schemaTree = (): SchemaTree => {
  if (tree) return tree;
  const leaves: Leaf[] = [];
  const sections = new Set<string>();
  const walk = (shape: Record<string, z.ZodType>, path: string[]) => {
    for (const [key, schema] of Object.entries(shape)) {
      const p = [...path, key];
      const def = defOf(schema);
      if (def.type === 'prefault' && defOf(def.innerType).type === 'object') {
        sections.add(p.join('.'));
        walk(defOf(def.innerType).shape, p);
        continue;
      }
      const meta = schema.meta() as LeafMeta | undefined;
      if (!meta) throw new Error(`config leaf ${p.join('.')} has no metadata`);
      leaves.push({ path: p, key: p.join('.'), env: meta.env ?? derivedEnvName(p), aliases: meta.aliases ?? [], meta, schema });
    }
  };
  walk(ConfigSchema.shape as unknown as Record<string, z.ZodType>, []);
  tree = { leaves, byKey: new Map(leaves.map((l) => [l.key, l])), sections };
  return tree;
};

/** Every leaf of the schema with its env name, in declaration order. */
export const configLeaves = (): Leaf[] => schemaTree().leaves;

/** The leaf a (possibly deeper, e.g. map entry) path belongs to. */
export const leafOf = (path: readonly (string | number | symbol)[]): Leaf | undefined => {
  const { byKey } = schemaTree();
  for (let n = path.length; n > 0; n--) {
    const leaf = byKey.get(path.slice(0, n).map(String).join('.'));
    if (leaf) return leaf;
  }
  return undefined;
};
