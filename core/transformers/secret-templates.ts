import { checkHeaders, RESERVED_HEADERS } from '../lua/headers';
import { hostAllowed } from '../lua/http';

// Delivery-time secret injection (HOWK's `_delivery_headers` / `_delivery_query_params`).
// A webhook carries TEMPLATES such as `Bearer ${PARTNER_TOKEN}`; the worker replaces each
// `${VAR}` with the environment variable right before the HTTP request, only for names in
// lua.secret_env_allowlist. The resolved values exist only in that request: they are never
// part of the webhook record, so they never reach Kafka, Redis, dead letters or logs. Each
// variable may only go to the hosts lua.secret_env_hosts lists for it: the endpoint is
// chosen at enqueue, the secret by the operator, and only the operator joins them.

const NAME = '[A-Za-z_][A-Za-z0-9_]{0,127}';
const VAR = new RegExp(`\\$\\{(${NAME})\\}`, 'g');
const ANY_OPEN = /\$\{/g;
const MAX_ENTRIES = 20;
const MAX_TEMPLATE = 1024;
const QUERY_NAME = /^[A-Za-z0-9._~-]{1,128}$/;

export type Templates = Record<string, string>;

/** The variables a template map refers to. */
export const templateVars = (t: Templates | undefined): string[] => {
  const out = new Set<string>();
  for (const v of Object.values(t ?? {})) for (const m of v.matchAll(VAR)) out.add(m[1]!);
  return [...out];
};

/** Validates a template map (name.json or howk.post opts); throws a message naming the problem. */
export const checkTemplates = (v: unknown, kind: 'header' | 'query'): Templates => {
  const what = kind === 'header' ? 'delivery headers' : 'delivery query params';
  const map = kind === 'header' ? checkHeaders(v, what) : checkQuery(v, what);
  if (Object.keys(map).length > MAX_ENTRIES) throw new Error(`${what}: at most ${MAX_ENTRIES} entries`);
  for (const [k, t] of Object.entries(map)) {
    if (kind === 'header' && (RESERVED_HEADERS.has(k) || k === 'content-type' || k === 'user-agent')) throw new Error(`${what}: ${k} is reserved`);
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

export type SecretReason = 'secret_not_allowed' | 'secret_missing' | 'secret_host_not_allowed';

export type Resolved =
  | { ok: true; url: string; headers: Record<string, string> }
  | { ok: false; reason_type: SecretReason; message: string };

export type TemplateSource = { endpoint: string; delivery_headers?: Templates; delivery_query_params?: Templates };

/**
 * Resolves a webhook's templates against the environment. Messages name the variable and
 * never carry a value. `env` is only asked for allow-listed names whose hosts include the
 * endpoint's.
 */
export const resolveDelivery = (
  w: TemplateSource,
  allow: ReadonlySet<string>,
  env: (name: string) => string | undefined,
  hosts: Readonly<Record<string, readonly string[]>>,
): Resolved => {
  const h = w.delivery_headers;
  const q = w.delivery_query_params;
  if (!h && !q) return { ok: true, url: w.endpoint, headers: {} };
  const vars = [...new Set([...templateVars(h), ...templateVars(q)])];
  const values = new Map<string, string>();
  const host = new URL(w.endpoint).hostname.replace(/^\[|\]$/g, '');
  for (const name of vars) {
    if (!allow.has(name)) return { ok: false, reason_type: 'secret_not_allowed', message: `\${${name}} is not in lua.secret_env_allowlist` };
    const may = Object.hasOwn(hosts, name) ? hosts[name]! : [];
    if (!hostAllowed(host, may)) return { ok: false, reason_type: 'secret_host_not_allowed', message: `\${${name}} may not be sent to ${host} (not in lua.secret_env_hosts.${name})` };
    const value = env(name);
    if (value === undefined || value === '') return { ok: false, reason_type: 'secret_missing', message: `\${${name}} is allow-listed but not set in the worker's environment` };
    values.set(name, value);
  }
  const fill = (t: string) => t.replace(VAR, (_, name: string) => values.get(name)!);
  const headers: Record<string, string> = {};
  for (const [k, t] of Object.entries(h ?? {})) {
    const v = fill(t);
    if (/[\r\n\0]/.test(v)) return { ok: false, reason_type: 'secret_missing', message: `delivery header ${k}: a variable's value contains a line break or NUL` };
    headers[k] = v;
  }
  let url = w.endpoint;
  if (q && Object.keys(q).length) {
    const u = new URL(w.endpoint);
    for (const [k, t] of Object.entries(q)) u.searchParams.set(k, fill(t));
    url = u.href;
  }
  return { ok: true, url, headers };
};
