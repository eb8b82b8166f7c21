import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { objectMembers, slice } from '../../domain/raw-json';
import { NotConfiguredError, TooLargeError, ValidationError } from '../../errors/errors';
import { LuaError, LuaSyntaxError, runDeliveryScript } from '../../lua';
import type { ApiDeps } from '../deps';
import { checkConfigId } from '../enqueue-request';
import { errorResponse } from '../errors';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const luaErrorResponse = (c: Context, e: LuaError) =>
  c.json({ error: { code: e.code, reason_type: e.code, message: e.message, line: e.line ?? null } }, e instanceof LuaSyntaxError ? 400 : 422);

/** The Lua text of a PUT: a raw body, or JSON `{"script": "..."}` (also `lua_code`, HOWK's name). */
const scriptOf = (c: Context, text: string): string => {
  if (!(c.req.header('content-type') ?? '').toLowerCase().includes('json')) return text;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new ValidationError(`body is not valid JSON: ${(e as Error).message}`, 'body');
  }
  const code = isObject(v) ? (v.script ?? v.lua_code) : undefined;
  if (typeof code !== 'string') throw new ValidationError('body must be {"script": "<lua>"} (or raw Lua with another content type)', 'script');
  return code;
};

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
    const code = scriptOf(c, await c.req.text());
    try {
      const r = await store().put(configId, code);
      return c.json({ config_id: configId, sha256: r.sha256, bytes: new TextEncoder().encode(code).length, updated_at: r.updated_at });
    } catch (e) {
      if (e instanceof LuaError) return luaErrorResponse(c, e);
      throw e;
    }
  });
  app.get('/config/:config/script', (c) => {
    const r = store().get(id(c));
    return c.json({ config_id: r.config_id, script: r.code, sha256: r.sha256, updated_at: r.updated_at });
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
    const code = typeof v.script === 'string' ? v.script : store().scriptFor(configId);
    if (code === undefined) return c.json({ error: { code: 'script_not_found', message: `config ${configId} has no script (and none was given)` } }, 404);
    const attempt = typeof v.attempt === 'number' && Number.isInteger(v.attempt) && v.attempt >= 0 ? v.attempt : 0;
    const payload = slice(text, objectMembers(text, 0).get('payload')!);
    const started = performance.now();
    try {
      const r = await runDeliveryScript(code, { payload, headers, config_id: configId, attempt, endpoint: typeof v.endpoint === 'string' ? v.endpoint : undefined, max_attempts: d.config.retry.max_attempts }, {
        limits: { timeoutMs: d.config.lua.timeout, memoryLimitMb: d.config.lua.memory_limit_mb },
        engine: d.lua?.engine,
        services: { kv: d.luaKv, ...d.lua?.forNamespace(configId) },
      });
      return c.json({
        config_id: configId,
        request: { body: r.body, headers: r.headers },
        body_changed: r.body_changed,
        retry_on_status: r.retry_on_status ?? null,
        ignored_headers: r.ignored_headers,
        cpu_ms: r.cpu_ms,
        duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
      });
    } catch (e) {
      if (e instanceof LuaError) return luaErrorResponse(c, e);
      throw e;
    }
  });
  return app;
};
