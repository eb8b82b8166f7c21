import { fillTemplate, templateVars, type Templates } from '../domain/templates';
import { hostAllowed } from '../lua/http';

// Delivery-time secret injection (HOWK's `_delivery_headers` / `_delivery_query_params`).
// A webhook carries TEMPLATES such as `Bearer ${PARTNER_TOKEN}`; the worker replaces each
// `${VAR}` with the environment variable right before the HTTP request, only for names in
// lua.secret_env_allowlist. The resolved values exist only in that request: they are never
// part of the webhook record, so they never reach Kafka, Redis, dead letters or logs. Each
// variable may only go to the hosts lua.secret_env_hosts lists for it: the endpoint is
// chosen at enqueue, the secret by the operator, and only the operator joins them. The
// template grammar is core/domain/templates.ts.

export type SecretReason = 'secret_not_allowed' | 'secret_missing' | 'secret_host_not_allowed';

export type Resolved = { ok: true; url: string; headers: Record<string, string> } | { ok: false; reason_type: SecretReason; message: string };

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
    if (!hostAllowed(host, may))
      return { ok: false, reason_type: 'secret_host_not_allowed', message: `\${${name}} may not be sent to ${host} (not in lua.secret_env_hosts.${name})` };
    const value = env(name);
    if (value === undefined || value === '') return { ok: false, reason_type: 'secret_missing', message: `\${${name}} is allow-listed but not set in the worker's environment` };
    values.set(name, value);
  }
  const fill = (t: string) => fillTemplate(t, values);
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
