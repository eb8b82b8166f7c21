import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { NotConfiguredError, NotFoundError, TooLargeError } from '../../errors/errors';
import { LuaError, LuaSyntaxError, runTransformer } from '../../lua';
import { transformerItems } from '../../transformers/items';
import { checkBasicAuth, configIdFor, TRANSFORMER_NAME } from '../../transformers/registry';
import type { ApiDeps } from '../deps';
import { checkConfigId, enqueueItemSchema } from '../enqueue-request';
import { errorResponse } from '../errors';

/**
 * POST /incoming/:name — runs a transformer on the inbound body; every `howk.post` of the run
 * becomes a webhook, enqueued in ONE call after the run succeeded (all or nothing).
 */
export const incomingRoutes = (d: ApiDeps) => {
  const app = new Hono();
  const limits = d.config.api;
  // The same limits as a batch enqueue (header count and sizes, endpoint length). Built once:
  // building it costs ~0.8 ms, more than the Lua run (docs/BENCHMARKS.md, "Lua").
  const itemSchema = enqueueItemSchema(limits);
  const limitBody = bodyLimit({
    maxSize: limits.max_request_size,
    onError: (c) => {
      c.header('Connection', 'close');
      return errorResponse(c, new TooLargeError('request body', limits.max_request_size));
    },
  });

  app.post('/incoming/:name', async (c, next) => {
    const name = c.req.param('name');
    if (!d.transformers) throw new NotConfiguredError('transformers are not available on this server');
    const script = TRANSFORMER_NAME.test(name) ? d.transformers.get(name) : undefined;
    if (!script) throw new NotFoundError(`transformer ${name}`);
    // Credentials before the body is read: an unauthenticated caller cannot make us buffer it.
    const auth = await checkBasicAuth(script.auth, c.req.header('authorization'), d.transformers.verifyHash);
    if (!auth.ok) {
      c.header('WWW-Authenticate', `Basic realm="howk incoming ${name}", charset="UTF-8"`);
      return c.json({ error: { code: 'unauthorized', message: auth.message } }, 401);
    }
    return next();
  }, limitBody, async (c) => {
    const name = c.req.param('name');
    const script = d.transformers!.get(name);
    if (!script) throw new NotFoundError(`transformer ${name}`);
    const body = await c.req.text();
    const headers: Record<string, string> = {};
    c.req.raw.headers.forEach((v, k) => {
      // The script's own credentials are not its input.
      if (k === 'authorization' && script.auth.kind !== 'none') return;
      headers[k] = v;
    });
    const query: Record<string, string | string[]> = {};
    const url = new URL(c.req.url);
    for (const k of new Set(url.searchParams.keys())) {
      const all = url.searchParams.getAll(k);
      query[k] = all.length === 1 ? all[0]! : all;
    }
    const configId = configIdFor(script);
    checkConfigId(configId);
    let result;
    try {
      result = await runTransformer(script.code, { body, headers, query, method: c.req.method, path: url.pathname, script: name }, {
        allowedDomains: script.settings.allowed_domains,
        maxWebhooks: limits.max_batch_size,
        limits: { timeoutMs: d.config.lua.timeout, memoryLimitMb: d.config.lua.memory_limit_mb },
        engine: d.lua?.engine,
        // http namespace incoming:<name> (lua.http_allowlist), plus the script's own allowed_hosts.
        services: { kv: d.luaKv, ...d.lua?.forNamespace(`incoming:${name}`, script.settings.allowed_hosts), log: (level, message, fields) => d.log[level](`transformer ${name}: ${message}`, { ...fields, transformer: name }) },
      });
    } catch (e) {
      if (!(e instanceof LuaError)) throw e;
      d.log.warn('transformer failed; nothing enqueued', { transformer: name, reason_type: e.code, error: e.message });
      return c.json({ error: { code: e.code, reason_type: e.code, message: e.message, line: e.line ?? null } }, e instanceof LuaSyntaxError ? 400 : 422);
    }
    if (!result.webhooks.length) return c.json({ webhooks: [], count: 0 });
    // Templates only: name.json's _delivery_* for every webhook, howk.post's opts per webhook (they win).
    const items = transformerItems(name, result.webhooks, itemSchema, { delivery_headers: script.settings.delivery_headers, delivery_query_params: script.settings.delivery_query_params });
    const results = await d.enqueue(configId, items);
    return c.json({ webhooks: results.map((r) => ({ id: r.webhook_id, endpoint: r.endpoint })), count: results.length });
  });
  return app;
};
