import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { objectMembers, slice } from '../../domain/raw-json';
import { NotConfiguredError, TooLargeError, ValidationError } from '../../errors/errors';
import { LuaError, LuaSyntaxError, redactor, runDeliveryScript, type Redactor } from '../../lua';
import type { ApiDeps } from '../deps';
import { checkConfigId } from '../../domain/config-id';
import { errorResponse } from '../errors';

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
  if (typeof code !== 'string' || !code.trim()) throw new ValidationError('script is empty: send the Lua as the body (or {"script": "<lua>"}); to remove a script use DELETE', 'script');
  return { code, applyToChildren };
};

/** The test route's answer never shows what a credential gave the script: any string holding it is `[redacted]`. */
const redactHeaders = (r: Redactor, h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k, r(v)]));

/** Per-config delivery scripts: PUT/GET/DELETE /config/:config/script and a dry run. */
export const scriptRoutes = (d: ApiDeps) => {
  const app = new Hono();
  const limitBody = bodyLimit({
    maxSize: Math.max(d.config.api.max_request_size, d.config.lua.max_script_bytes * 2 + 1024),
    onError: (c) => {
      c.header('Connection', 'close');
      return errorResponse(c, new TooLargeError('request body', d.config.api.max_request_size));
    },
  });
  const store = () => {
    if (!d.scripts) throw new NotConfiguredError('delivery scripts are not available on this server');
    return d.scripts;
  };
  const id = (c: Context) => {
    const v = c.req.param('config') ?? '';
    checkConfigId(v);
    return v;
  };

  app.put('/config/:config/script', limitBody, async (c) => {
    const configId = id(c);
    const { code, applyToChildren } = scriptOf(c, await c.req.text());
    try {
      const r = await store().put(configId, code, applyToChildren);
      return c.json({ config_id: configId, sha256: r.sha256, bytes: new TextEncoder().encode(code).length, apply_to_children: applyToChildren, updated_at: r.updated_at });
    } catch (e) {
      if (e instanceof LuaError) return luaErrorResponse(c, e);
      throw e;
    }
  });
  app.get('/config/:config/script', (c) => {
    const r = store().get(id(c));
    return c.json({ config_id: r.config_id, script: r.code, sha256: r.sha256, apply_to_children: r.apply_to_children ?? false, updated_at: r.updated_at });
  });
  app.delete('/config/:config/script', async (c) => {
    const configId = id(c);
    await store().remove(configId);
    return c.json({ config_id: configId, deleted: true });
  });

  /**
   * Dry run: `{"payload": <json>, "headers"?: {...}, "script"?: "<lua>", "attempt"?: n, "endpoint"?: url}`.
   * Runs the given script, else the stored one (own or namespace), on the payload's bytes; nothing is sent.
   */
  app.post('/config/:config/script/test', limitBody, async (c) => {
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
    if (typeof v.script === 'string' && new TextEncoder().encode(v.script).length > d.config.lua.max_script_bytes) throw new TooLargeError('script', d.config.lua.max_script_bytes);
    // An inline script is the caller's, on this config; a stored one opens credentials as the config it is stored on.
    const script = typeof v.script === 'string' ? { code: v.script, owner: configId } : store().scriptFor(configId);
    if (script === undefined) return c.json({ error: { code: 'script_not_found', message: `config ${configId} has no script (and none was given)` } }, 404);
    const attempt = typeof v.attempt === 'number' && Number.isInteger(v.attempt) && v.attempt >= 0 ? v.attempt : 0;
    const payload = slice(text, objectMembers(text, 0).get('payload')!);
    const endpoint = typeof v.endpoint === 'string' ? v.endpoint : undefined;
    const { credentials, ...host } = d.lua?.forNamespace(configId, [], script.owner) ?? {};
    const redact = () => redactor(credentials?.used.map((u) => u.plaintext) ?? []);
    const started = performance.now();
    try {
      const r = await runDeliveryScript(script.code, { payload, headers, config_id: configId, attempt, endpoint, max_attempts: d.config.retry.max_attempts }, {
        limits: { timeoutMs: d.config.lua.timeout, memoryLimitMb: d.config.lua.memory_limit_mb },
        engine: d.lua?.engine,
        services: { kv: d.luaKv, ...host },
      });
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
  });
  return app;
};
