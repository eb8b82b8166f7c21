import { Hono } from 'hono';
import type { ApiDeps, DependencyCheck } from '../core/http/deps';
import { errorResponse } from '../core/http/errors';
import { authMiddleware } from '../core/http/middleware/auth';
import { headerLimits } from '../core/http/middleware/limits';
import { enqueueRoutes } from '../core/http/routes/enqueue';
import { healthRoutes } from '../core/http/routes/health';
import { statusRoutes } from '../core/http/routes/status';
import { createLogger } from '../core/ports/logger';
import { systemClock } from '../core/ports/clock';
import { secretBoxFromConfig } from '../core/signing/secret-box';
import { edgeConfigFrom } from './config';
import { createEdgeEnqueuer } from './enqueue';
import { bundledTransformers, transformerSecretNames } from './incoming/registry';
import { incomingRoutes } from './incoming/route';
import { edgeKeyService } from './keys';
import { restKv } from './lua/engine';
import type { DurableObjectNamespace } from './runtime';
import { createRestProducer } from './upstash/kafka';
import { createEdgeRedis, edgeHotState } from './upstash/redis';

export type EdgeEnv = Record<string, unknown> & { GATE: DurableObjectNamespace };

/**
 * The edge Worker's HTTP surface: howk-api's enqueue routes (same schemas, limits, auth and
 * errors, from core/http) on the edge enqueuer, status reads over the Redis REST dialect,
 * /incoming transformers, and health. Built once per isolate.
 */
export const createEdgeApp = async (env: EdgeEnv) => {
  const { config, edge } = edgeConfigFrom(env, transformerSecretNames());
  const log = createLogger('howk-edge', config.log.level);
  const clock = systemClock;
  const kafka = createRestProducer({ url: edge.kafka_rest_url, username: edge.kafka_rest_username, password: edge.kafka_rest_password!, deadlineMs: edge.produce_deadline, retryAfterSec: edge.retry_after });
  const redis = edge.redis_rest_url && edge.redis_rest_token ? createEdgeRedis({ url: edge.redis_rest_url, token: edge.redis_rest_token, timeoutMs: edge.produce_deadline }) : undefined;
  const hot = edgeHotState(redis);
  const dependencies: DependencyCheck[] = [{ name: 'kafka_rest', check: async () => void (await kafka.topics()) }];
  if (redis) dependencies.push({ name: 'redis_rest', check: () => hot.ping() });
  const deps: ApiDeps = {
    config,
    clock,
    log,
    hot,
    dependencies,
    enqueue: createEdgeEnqueuer({ config, gates: env.GATE, producer: kafka, clock, log, secretBox: await secretBoxFromConfig(config.signing), retryAfterSec: edge.retry_after }),
    keys: edgeKeyService(edge.api_keys, clock),
  };

  const app = new Hono();
  app.onError((e, c) => errorResponse(c, e, log));
  app.notFound((c) => c.json({ error: { code: 'not_found', message: `no route for ${c.req.method} ${c.req.path}` } }, 404));
  app.use('*', headerLimits(deps), authMiddleware(deps));
  app.route('/', healthRoutes(deps));
  app.route('/', enqueueRoutes(deps));
  app.route('/', statusRoutes(deps));
  app.route(
    '/',
    incomingRoutes({
      config,
      env,
      log,
      enqueue: deps.enqueue,
      transformers: bundledTransformers,
      maxInstructions: edge.lua_max_instructions,
      services: (t) => ({
        ...(redis ? { kv: restKv(redis) } : {}),
        log: (level, message, fields) => log[level](message, { transformer: t.name, ...fields }),
        ...(t.config.http_allow ? { fetch: (url, init) => fetch(url, init), http: { allow: t.config.http_allow } } : {}),
      }),
    }),
  );
  return app;
};
