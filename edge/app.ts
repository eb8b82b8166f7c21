import { createApiApp } from '../core/http/app';
import type { ApiDeps, DependencyCheck } from '../core/http/deps';
import { createLogger } from '../core/ports/logger';
import { systemClock } from '../core/ports/clock';
import { secretBoxFromConfig } from '../core/signing/secret-box';
import { edgeConfigFrom, edgeKeysOf, edgeRedisOf, kafkaRestOptions } from './config';
import { createEdgeEnqueuer } from './enqueue';
import { edgeTransformers } from './incoming/registry';
import { restInboundReplays } from './incoming/replays';
import { edgeKeyService, sharedKeyRate } from './keys';
import { edgeLuaEngine, edgeLuaHost, restKv } from './lua/engine';
import type { DurableObjectNamespace } from './runtime';
import { createRestProducer } from './upstash/kafka';
import { restIdempotency } from './upstash/idempotency';
import { edgeHotState } from './upstash/redis';

export type EdgeEnv = Record<string, unknown> & { GATE: DurableObjectNamespace };

/**
 * The edge Worker's HTTP surface, from the route table of core/http (same schemas, limits,
 * auth and errors as howk-api): enqueue on the edge enqueuer, status reads over the Redis
 * REST dialect, health, the OpenAPI document, and /incoming on bundled transformers. Routes whose
 * capabilities it lacks (listings, retry and replay, keys, secrets, scripts, endpoint admin)
 * are not mounted (core/http/runtimes.ts). Built once per isolate.
 */
export const createEdgeApp = async (env: EdgeEnv) => {
  const { config, edge } = edgeConfigFrom(env);
  const log = createLogger('howk-edge', config.log.level);
  const clock = systemClock;
  const kafka = createRestProducer(kafkaRestOptions(edge));
  const redis = edgeRedisOf(edge);
  // The fleet's key names: the hash-tagged ones when the Redis behind the bridge is a cluster.
  const layout = edgeKeysOf(config);
  const hot = edgeHotState(redis, layout);
  const dependencies: DependencyCheck[] = [{ name: 'kafka_rest', check: async () => void (await kafka.topics()) }];
  if (redis) dependencies.push({ name: 'redis_rest', check: () => hot.ping() });
  const deps: ApiDeps = {
    config,
    clock,
    log,
    hot,
    dependencies,
    enqueue: createEdgeEnqueuer({
      config,
      gates: env.GATE,
      producer: kafka,
      clock,
      log,
      secretBox: await secretBoxFromConfig(config.signing),
      retryAfterSec: edge.retry_after,
      ...(redis ? { idempotency: restIdempotency(redis, layout) } : {}),
    }),
    keys: edgeKeyService({
      redis,
      bootstrap: edge.api_keys,
      cacheMs: edge.key_cache,
      missCacheMs: edge.key_miss_cache,
      lookups: { rate: edge.key_lookup_rate, burst: edge.key_lookup_burst },
      retryAfterSec: edge.retry_after,
      clock,
      log,
    }),
    // Cloudflare's own record of the client's address; per-client limits (key lookups, /incoming auth) key by it.
    remoteAddress: (c) => c.req.header('cf-connecting-ip'),
    keyRateLimit: sharedKeyRate(env.GATE, config.api.auth.rate_limit, config.api.auth.rate_burst, edge.retry_after),
    // /incoming is core's route: the edge supplies the bundled scripts with Worker secrets, the
    // Lua engine's host (workerd loader, instruction budget, fetch) and kv over the bridge.
    transformers: edgeTransformers(env),
    lua: edgeLuaHost(config, edgeLuaEngine(edge.lua_max_instructions)),
    // Replay marks of signed requests in the fleet's Redis (shared with howk-api); without a
    // Redis REST endpoint a copy runs again, as it does without kv.
    ...(redis ? { luaKv: restKv(redis), inboundReplays: restInboundReplays(redis) } : {}),
  };

  return createApiApp(deps);
};
