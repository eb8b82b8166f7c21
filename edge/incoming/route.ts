import type { Context } from 'hono';
import { NotFoundError } from '../../core/errors/errors';
import { checkConfigId } from '../../core/domain/config-id';
import { enqueueItemSchema } from '../../core/domain/enqueue';
import type { RouteHandler } from '../../core/http/route';
import { limitBody } from '../../core/http/routes/body-limit';
import { LuaError, LuaSyntaxError, runTransformer, type LuaServices } from '../../core/lua';
import type { Enqueuer } from '../../core/pipeline/enqueue';
import type { Logger } from '../../core/ports/logger';
import { inboundRequest, verifyInbound } from '../../core/signing/inbound';
import type { Config } from '../../core/config/schema';
import { transformerItems } from '../../core/transformers/items';
import { TRANSFORMER_NAME } from '../../core/transformers/registry';
import { edgeLuaEngine } from '../lua/engine';
import { checkBasicAuth } from './auth';
import type { Transformer } from './bundle';

// The edge's handler of POST /incoming/:name (declared in core/http/routes/incoming.ts):
// Basic auth (when configured), the provider's signature on the raw bytes, then the
// transformer on the core Lua engine, and its webhooks enqueued
// together (accepted or refused whole) through the DomainGates. Answers as howk-api's route
// (core/http/routes/incoming.ts) does: 200 {webhooks: [{id, endpoint}], count}; a script
// error is 400 (syntax) or 422 with its reason type; the posted webhooks meet the enqueue limits.

export type IncomingDeps = {
  config: Config;
  env: Record<string, unknown>;
  transformers: () => Map<string, Transformer>;
  enqueue: Enqueuer;
  log: Logger;
  /** Lua services of a run (kv over the Redis REST dialect, log). */
  services: (t: Transformer) => LuaServices;
  maxInstructions: number;
};

const unauthorized = (c: Context, message: string, basic: boolean) => {
  if (basic) c.header('WWW-Authenticate', 'Basic realm="howk-incoming"');
  return c.json({ error: { code: 'unauthorized', message } }, 401);
};

export const incomingHandler = (d: IncomingDeps): RouteHandler[] => {
  const itemSchema = enqueueItemSchema(d.config.api);
  return [
    limitBody(d.config.api.max_request_size),
    async (c) => {
      const name = c.req.param('name')!;
      const t = TRANSFORMER_NAME.test(name) ? d.transformers().get(name) : undefined;
      if (!t) throw new NotFoundError(`transformer ${name}`);
      const auth = checkBasicAuth(t, d.env, c.req.header('authorization'));
      if (auth === 'refused') return unauthorized(c, `transformer ${name} needs valid Basic credentials`, true);
      const body = new Uint8Array(await c.req.arrayBuffer());
      // The signature is checked on the bytes as received, before anything parses them.
      if (t.config.verify) {
        const v = t.config.verify;
        const secrets = v.secrets.map((s) => d.env[s]).filter((s): s is string => typeof s === 'string' && s.length > 0);
        const r = await verifyInbound({ provider: v.provider as never, secrets, toleranceSec: v.tolerance }, inboundRequest(c.req.raw.headers, body, Date.now()));
        if (!r.ok) {
          d.log.warn('inbound signature refused', { transformer: name, provider: v.provider, reason: r.reason });
          return unauthorized(c, `${v.provider} signature verification failed: ${r.detail}`, false);
        }
      }
      const configId = t.config.config_id ?? `incoming:${name}`;
      checkConfigId(configId);
      const headers: Record<string, string> = {};
      c.req.raw.headers.forEach((v, k) => {
        // The script's own credentials are not its input.
        if (k !== 'authorization' || auth === 'open') headers[k] = v;
      });
      const query: Record<string, string | string[]> = {};
      for (const [k, vs] of Object.entries(c.req.queries())) query[k] = vs.length === 1 ? vs[0]! : vs;
      let webhooks;
      try {
        ({ webhooks } = await runTransformer(
          t.code,
          { body: new TextDecoder().decode(body), headers, query, method: c.req.method, path: c.req.path, script: name },
          {
            engine: edgeLuaEngine(d.maxInstructions),
            allowedDomains: t.config.allowed_domains,
            maxWebhooks: t.config.max_webhooks ?? d.config.api.max_batch_size,
            services: d.services(t),
          },
        ));
      } catch (e) {
        if (!(e instanceof LuaError)) throw e;
        d.log.warn('transformer failed; nothing enqueued', { transformer: name, reason_type: e.code, error: e.message });
        return c.json({ error: { code: e.code, reason_type: e.code, message: e.message, line: e.line ?? null } }, e instanceof LuaSyntaxError ? 400 : 422);
      }
      if (!webhooks.length) return c.json({ webhooks: [], count: 0 });
      // The same limits as a batch enqueue; `_delivery_*` templates are not carried by the
      // edge (docs/LUA.md, "The edge").
      const items = transformerItems(name, webhooks, itemSchema, null);
      // All of them or none: one enqueue call, one outcome.
      const results = await d.enqueue(configId, items);
      return c.json({ webhooks: results.map((r) => ({ id: r.webhook_id, endpoint: r.endpoint })), count: results.length });
    },
  ];
};
