import { checkHeaders } from './headers';
import { RESERVED_HEADERS } from './reserved-headers';

// The grammar of delivery-time `${VAR}` templates (transformers' `_delivery_headers` /
// `_delivery_query_params`, docs/LUA.md). They are resolved by the worker at send time
// (core/transformers/secret-templates.ts).

const NAME = '[A-Za-z_][A-Za-z0-9_]{0,127}';
const VAR = new RegExp(`\\$\\{(${NAME})\\}`, 'g');
const ANY_OPEN = /\$\{/g;
const MAX_ENTRIES = 20;
const MAX_TEMPLATE = 1024;
const QUERY_NAME = /^[A-Za-z0-9._~-]{1,128}$/;

/**
 * The sender sets content-type and user-agent itself (core/pipeline/attempt.ts), so a
 * template may not name them either.
 */
const TEMPLATE_RESERVED_HEADERS: ReadonlySet<string> = new Set([...RESERVED_HEADERS, 'content-type', 'user-agent']);

export type Templates = Record<string, string>;

/** The variables a template map refers to. */
export const templateVars = (t: Templates | undefined): string[] => {
  const out = new Set<string>();
  for (const v of Object.values(t ?? {})) for (const m of v.matchAll(VAR)) out.add(m[1]!);
  return [...out];
};

/** `t` with each `${VAR}` replaced by its value; every variable must be in `values`. */
export const fillTemplate = (t: string, values: ReadonlyMap<string, string>): string => t.replace(VAR, (_, name: string) => values.get(name)!);

/** Validates a template map (name.json or howk.post opts); throws a message naming the problem. */
export const checkTemplates = (v: unknown, kind: 'header' | 'query'): Templates => {
  const what = kind === 'header' ? 'delivery headers' : 'delivery query params';
  const map = kind === 'header' ? checkHeaders(v, what) : checkQuery(v, what);
  if (Object.keys(map).length > MAX_ENTRIES) throw new Error(`${what}: at most ${MAX_ENTRIES} entries`);
  for (const [k, t] of Object.entries(map)) {
    if (kind === 'header' && TEMPLATE_RESERVED_HEADERS.has(k)) throw new Error(`${what}: ${k} is reserved`);
    if (t.length > MAX_TEMPLATE) throw new Error(`${what}.${k} is longer than ${MAX_TEMPLATE} characters`);
    // Every "${" must open a well-formed ${NAME}: a typo must not be sent literally.
    const opens = t.match(ANY_OPEN)?.length ?? 0;
    const vars = t.match(VAR)?.length ?? 0;
    if (opens !== vars) throw new Error(`${what}.${k}: malformed template (use \${NAME} with A-Z a-z 0-9 _)`);
  }
  return map;
};

const checkQuery = (v: unknown, what: string): Templates => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${what} must be a table of name = value`);
  const out: Templates = {};
  for (const [k, x] of Object.entries(v)) {
    if (!QUERY_NAME.test(k)) throw new Error(`${what}: invalid parameter name ${JSON.stringify(k)}`);
    if (typeof x !== 'string' && typeof x !== 'number') throw new Error(`${what}.${k} must be a string`);
    out[k] = String(x);
  }
  return out;
};
