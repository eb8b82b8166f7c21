import { Hono, type Context } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { NotFoundError, TooLargeError } from '../../core/errors/errors';
import type { EnqueueItem } from '../../core/http/enqueue-request';
import { errorResponse } from '../../core/http/errors';
import { runTransformer, type LuaServices } from '../../core/lua';
import type { Enqueuer } from '../../core/pipeline/enqueue';
import type { Logger } from '../../core/pipeline/logger';
import { inboundRequest, verifyInbound } from '../../core/signing/inbound';
import type { Config } from '../../core/config/schema';
import { edgeLuaEngine } from '../lua/engine';
import { checkBasicAuth } from './auth';
import type { Transformer } from './bundle';

// POST /incoming/:name at the edge: Basic auth (when configured), the provider's signature
// on the raw bytes, then the transformer on the core Lua engine, and its webhooks enqueued
// together (accepted or refused whole) through the DomainGates.

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

export const incomingRoutes = (d: IncomingDeps) => {
  const app = new Hono();
  const limit = d.config.api.max_request_size;
  app.post(
    '/incoming/:name',
    bodyLimit({ maxSize: limit, onError: (c) => errorResponse(c, new TooLargeError('request body', limit)) }),
    async (c) => {
      const name = c.req.param('name');
      const t = d.transformers().get(name);
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
      const query: Record<string, string | string[]> = {};
      for (const [k, vs] of Object.entries(c.req.queries())) query[k] = vs.length === 1 ? vs[0]! : vs;
      const text = new TextDecoder().decode(body);
      const { webhooks } = await runTransformer(
        t.code,
        { body: text, headers: Object.fromEntries(c.req.raw.headers), query, method: c.req.method, path: c.req.path, script: name },
        { engine: edgeLuaEngine(d.maxInstructions), allowedDomains: t.config.allowed_domains, maxWebhooks: t.config.max_webhooks, services: d.services(t) },
      );
      if (!webhooks.length) return c.json({ webhooks: [], count: 0 }, 200);
      const items: EnqueueItem[] = webhooks.map((w) => ({ endpoint: w.endpoint, payload: w.payload, headers: w.headers, idempotency_key: w.idempotency_key, max_attempts: w.max_attempts }));
      // All of them or none: one enqueue call, one outcome.
      const results = await d.enqueue(t.config.config_id ?? name, items);
      return c.json({ webhooks: results.map((r) => ({ id: r.webhook_id, endpoint: r.endpoint, status: r.status })), count: results.length }, 202);
    },
  );
  return app;
};
