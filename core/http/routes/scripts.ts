import type { Context } from 'hono';
import { z } from 'zod';
import { objectMembers, slice } from '../../domain/raw-json';
import { TooLargeError, ValidationError } from '../../errors/errors';
import { LuaError, LuaSyntaxError, redactor, runDeliveryScript, type Redactor } from '../../lua';
import type { ApiDeps } from '../deps';
import { checkConfigId } from '../../domain/config-id';
import { ConfigParam } from '../params';
import type { Route } from '../route';
import { limitBody } from './body-limit';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const luaErrorResponse = (c: Context, e: LuaError, redact: (s: string) => string = (s) => s) =>
  c.json({ error: { code: e.code, reason_type: e.code, message: redact(e.message), line: e.line ?? null } }, e instanceof LuaSyntaxError ? 400 : 422);

/** The Lua text of a PUT: a raw body, or JSON `{"script": "...", "apply_to_children"?: bool}` (also `lua_code`, HOWK's name). */
const scriptOf = (c: Context, text: string): { code: string; applyToChildren: boolean } => {
  const query = c.req.query('apply_to_children');
  if (query !== undefined && query !== 'true' && query !== 'false') throw new ValidationError('apply_to_children must be true or false', 'apply_to_children');
  let code: unknown = text;
  let applyToChildren = query === 'true';
  if ((c.req.header('content-type') ?? '').toLowerCase().includes('json')) {
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (e) {
      throw new ValidationError(`body is not valid JSON: ${(e as Error).message}`, 'body');
    }
    code = isObject(v) ? (v.script ?? v.lua_code) : undefined;
    if (typeof code !== 'string') throw new ValidationError('body must be {"script": "<lua>"} (or raw Lua with another content type)', 'script');
    if (isObject(v) && v.apply_to_children !== undefined) {
      if (typeof v.apply_to_children !== 'boolean') throw new ValidationError('apply_to_children must be a boolean', 'apply_to_children');
      applyToChildren = v.apply_to_children;
    }
  }
  // An empty PUT is a mistake, not a way to delete (that is DELETE /config/:config/script).
  if (typeof code !== 'string' || !code.trim())
    throw new ValidationError('script is empty: send the Lua as the body (or {"script": "<lua>"}); to remove a script use DELETE', 'script');
  return { code, applyToChildren };
};

/** The test route's answer never shows what a credential gave the script: any string holding it is `[redacted]`. */
const redactHeaders = (r: Redactor, h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, r(v)]));

const ScriptPutBody = z.object({ script: z.string().min(1), apply_to_children: z.boolean().optional() });
const ScriptPutResult = z.object({ config_id: z.string(), sha256: z.string(), bytes: z.number().int(), apply_to_children: z.boolean(), updated_at: z.string() });
const ScriptView = z.object({ config_id: z.string(), script: z.string(), sha256: z.string(), apply_to_children: z.boolean(), updated_at: z.string() });
const ScriptTestBody = z.object({
  payload: z.unknown(),
  headers: z.record(z.string(), z.string()).optional(),
  script: z.string().optional(),
  attempt: z.number().int().min(0).optional(),
  endpoint: z.string().optional(),
});
const ScriptTestResult = z.object({
  config_id: z.string(),
  request: z.object({ body: z.string(), headers: z.record(z.string(), z.string()) }),
  body_changed: z.boolean(),
  retry_on_status: z.array(z.number().int()).nullable(),
  ignored_headers: z.array(z.string()),
  credentials_used: z.array(z.string()),
  refused: z.object({ reason_type: z.literal('credential_host_not_allowed'), message: z.string() }).nullable(),
  cpu_ms: z.number(),
  duration_ms: z.number(),
});

const limit = (d: ApiDeps) => limitBody(Math.max(d.config.api.max_request_size, d.config.lua.max_script_bytes * 2 + 1024), d.config.api.max_request_size);
const id = (c: Context) => {
  const v = c.req.param('config') ?? '';
  checkConfigId(v);
  return v;
};
const script = { tag: 'scripts', access: 'admin', needs: ['scripts'], config: { from: 'param', name: 'config' }, request: { params: ConfigParam } } as const;

/** Per-config delivery scripts: PUT/GET/DELETE /config/:config/script and a dry run. */
export const scriptRoutes: Route[] = [
  {
    ...script,
    method: 'put',
    path: '/config/:config/script',
    summary:
      "Set the config's delivery script (Lua; syntax checked: 400 with the line; 413 over lua.max_script_bytes). Used by configs under this namespace (a:b:c falls back to a:b, then a) only with apply_to_children (JSON field or ?apply_to_children=true). An empty script is a 400 (remove one with DELETE)",
    // Raw Lua in any type, or JSON: a PUT is never a CORS "simple" request, so the type keeps no browser out.
    request: { ...script.request, body: () => ScriptPutBody, bodyRequired: true, media: 'any' },
    responses: { '200': { description: 'stored', schema: ScriptPutResult } },
    handler: (d) => [
      limit(d),
      async (c) => {
        const configId = id(c);
        const { code, applyToChildren } = scriptOf(c, await c.req.text());
        try {
          const r = await d.scripts!.put(configId, code, applyToChildren);
          return c.json({ config_id: configId, sha256: r.sha256, bytes: new TextEncoder().encode(code).length, apply_to_children: applyToChildren, updated_at: r.updated_at });
        } catch (e) {
          if (e instanceof LuaError) return luaErrorResponse(c, e);
          throw e;
        }
      },
    ],
  },
  {
    ...script,
    access: 'read',
    method: 'get',
    path: '/config/:config/script',
    summary: "The config's own delivery script",
    responses: { '200': { description: 'script', schema: ScriptView } },
    handler: (d) => [
      (c) => {
        const r = d.scripts!.get(id(c));
        return c.json({ config_id: r.config_id, script: r.code, sha256: r.sha256, apply_to_children: r.apply_to_children ?? false, updated_at: r.updated_at });
      },
    ],
  },
  {
    ...script,
    method: 'delete',
    path: '/config/:config/script',
    summary: "Remove the config's delivery script",
    responses: { '200': { description: 'removed', schema: z.object({ config_id: z.string(), deleted: z.literal(true) }) } },
    handler: (d) => [
      async (c) => {
        const configId = id(c);
        await d.scripts!.remove(configId);
        return c.json({ config_id: configId, deleted: true });
      },
    ],
  },
  /**
   * Dry run: `{"payload": <json>, "headers"?: {...}, "script"?: "<lua>", "attempt"?: n, "endpoint"?: url}`.
   * Runs the given script, else the stored one (own or namespace), on the payload's bytes; nothing is sent.
   */
  {
    ...script,
    method: 'post',
    path: '/config/:config/script/test',
    summary:
      'Dry run of the given or stored script on a sample payload: the request it would send (any value holding a decrypted credential is [redacted]), and timing (nothing is sent)',
    request: { ...script.request, body: () => ScriptTestBody, bodyRequired: true },
    responses: { '200': { description: 'transformed request', schema: ScriptTestResult } },
    handler: (d) => [
      limit(d),
      async (c) => {
        const configId = id(c);
        const text = await c.req.text();
        let v: unknown;
        try {
          v = JSON.parse(text);
        } catch (e) {
          throw new ValidationError(`body is not valid JSON: ${(e as Error).message}`, 'body');
        }
        if (!isObject(v) || v.payload === undefined) throw new ValidationError('body must be {"payload": ..., "headers"?: {...}, "script"?: "..."}', 'payload');
        const headers: Record<string, string> = {};
        if (v.headers !== undefined) {
          if (!isObject(v.headers) || !Object.values(v.headers).every((x) => typeof x === 'string')) throw new ValidationError('headers must be an object of strings', 'headers');
          Object.assign(headers, v.headers);
        }
        if (v.script !== undefined && typeof v.script !== 'string') throw new ValidationError('script must be a string', 'script');
        if (typeof v.script === 'string' && new TextEncoder().encode(v.script).length > d.config.lua.max_script_bytes)
          throw new TooLargeError('script', d.config.lua.max_script_bytes);
        // An inline script is the caller's, on this config; a stored one opens credentials as the config it is stored on.
        const script = typeof v.script === 'string' ? { code: v.script, owner: configId } : d.scripts!.scriptFor(configId);
        if (script === undefined) return c.json({ error: { code: 'script_not_found', message: `config ${configId} has no script (and none was given)` } }, 404);
        const attempt = typeof v.attempt === 'number' && Number.isInteger(v.attempt) && v.attempt >= 0 ? v.attempt : 0;
        const payload = slice(text, objectMembers(text, 0).get('payload')!);
        const endpoint = typeof v.endpoint === 'string' ? v.endpoint : undefined;
        const { credentials, ...host } = d.lua?.forNamespace(configId, [], script.owner) ?? {};
        const redact = () => redactor(credentials?.used.map((u) => u.plaintext) ?? []);
        const started = performance.now();
        try {
          const r = await runDeliveryScript(
            script.code,
            { payload, headers, config_id: configId, attempt, endpoint, max_attempts: d.config.retry.max_attempts },
            {
              limits: { timeoutMs: d.config.lua.timeout, memoryLimitMb: d.config.lua.memory_limit_mb },
              engine: d.lua?.engine,
              services: { kv: d.luaKv, ...host },
            },
          );
          const red = redact();
          let refused: { reason_type: 'credential_host_not_allowed'; message: string } | null = null;
          if (endpoint && credentials?.used.length) {
            let endpointHost: string | undefined;
            try {
              endpointHost = new URL(endpoint).hostname;
            } catch {
              endpointHost = undefined;
            }
            const bad = endpointHost === undefined ? credentials.used[0] : credentials.hostRefusal(endpointHost);
            if (bad) refused = { reason_type: 'credential_host_not_allowed', message: `credential ${bad.name} may not be sent to ${endpointHost ?? endpoint}` };
          }
          return c.json({
            config_id: configId,
            request: { body: red(r.body), headers: redactHeaders(red, r.headers) },
            body_changed: r.body_changed,
            retry_on_status: r.retry_on_status ?? null,
            ignored_headers: r.ignored_headers,
            credentials_used: [...new Set(credentials?.used.map((u) => u.name) ?? [])],
            refused,
            cpu_ms: r.cpu_ms,
            duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
          });
        } catch (e) {
          if (e instanceof LuaError) return luaErrorResponse(c, e, redact());
          throw e;
        }
      },
    ],
  },
];
