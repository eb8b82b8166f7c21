import { formatDuration } from './fields';
import { configLeaves, type Leaf } from './leaves';
import { ConfigSchema } from './schema';

// `.env.example`: every HOWK_* variable with its default, commented out so that copying the
// file to .env changes nothing until a line is uncommented. A unit test keeps it current.

const valueAt = (obj: unknown, path: readonly string[]): unknown => path.reduce<any>((o, k) => (o == null || typeof o !== 'object' ? undefined : o[k]), obj);

/** A default written the way the environment takes it (lists comma-separated, maps JSON). */
const envValue = (leaf: Leaf, v: unknown): string => {
  if (v === undefined) return '';
  if (leaf.meta.kind === 'duration') return formatDuration(v as number);
  if (Array.isArray(v)) return v.join(',');
  if (typeof v === 'object' && v !== null) return Object.keys(v).length ? JSON.stringify(v) : '';
  return String(v);
};

const oneLine = (s: string): string => s.replace(/\s+/g, ' ').trim();

/** The whole of .env.example. */
export const envExampleText = (): string => {
  const defaults = ConfigSchema.parse({});
  const out = [
    '# Every HOWK_* variable Howk reads, with its default. Generated from core/config/schema.ts by',
    '# `npm run docs:config`; do not edit by hand. Copy it to .env (or your orchestrator) and',
    '# uncomment what you change; docs/CONFIG.md explains each key.',
  ];
  let section = '';
  for (const leaf of configLeaves()) {
    const top = leaf.path[0]!;
    if (top !== section) {
      section = top;
      out.push('', `# --- ${section} ---`);
    }
    const former = leaf.aliases.length ? ` (former name: ${leaf.aliases.join(', ')})` : '';
    out.push(`# ${leaf.key}: ${oneLine(leaf.meta.description)}${former}${leaf.meta.secret ? ' (secret)' : ''}`);
    out.push(`# ${leaf.env}=${envValue(leaf, valueAt(defaults, leaf.path))}`);
  }
  return `${out.join('\n')}\n`;
};
