import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { MiddlewareHandler } from 'hono';
import { RateLimitedError, errorMessage } from '../../core/errors/errors';
import { createRateLimiter } from '../../core/security/rate-limit';
import type { Logger } from '../../core/ports/logger';
import type { RedisClient } from '../redis/client';
import { toHowkError } from '../redis/exec';
import { basicAuth, bearerAuth } from './auth';
import type { BridgeSettings } from './config';
import type { BridgeCounters } from './counters';
import type { KafkaRestProducer } from '../kafka/rest-producer';
import { dialectError, kafkaRoutes } from './kafka-routes';
import { redisRoutes } from './redis-routes';

export type BridgeDeps = { settings: BridgeSettings; producer: KafkaRestProducer; redis: RedisClient; counters: BridgeCounters; log: Logger };

/**
 * howk-bridge: the Upstash Kafka dialect under /kafka (Basic auth) and the Upstash Redis
 * dialect under /redis (Bearer auth), in front of a real Kafka and Redis. Errors answer in
 * the dialect's own shape, `{error}`.
 */
export const createBridgeApp = (d: BridgeDeps) => {
  const { settings: s } = d;
  const app = new Hono();
  app.onError((e, c) => {
    const { status, error, retryAfter } = dialectError(e);
    if (status === 500) d.log.error('bridge request failed', { path: c.req.path, error: e instanceof Error ? e.stack : String(e) });
    else if (status === 503) d.log.warn('dependency unavailable', { path: c.req.path, error });
    if (retryAfter) c.header('Retry-After', String(retryAfter));
    return c.json({ error }, status);
  });
  app.notFound((c) => c.json({ error: `no route for ${c.req.method} ${c.req.path}` }, 404));
  const sized = (max: number) => bodyLimit({ maxSize: max, onError: (c) => c.json({ error: `request body exceeds ${max} bytes` }, 413) });
  const limit = sized(s.max_request_size);
  const redisLimit = sized(Math.min(s.max_request_size, s.redis_max_request_size));
  // One bucket per route for every caller together: an exposed bridge caps what a leaked
  // credential can push at Kafka or Redis. After auth, so strangers cannot drain it.
  const rates = createRateLimiter(s.rate_limit, s.rate_burst);
  const counted = new WeakSet<Request>();
  const throttle =
    (route: string): MiddlewareHandler =>
    async (c, next) => {
      // '/redis' and '/redis/*' may both match one request: it is counted once.
      if (counted.has(c.req.raw)) return next();
      counted.add(c.req.raw);
      const r = rates(route, Date.now());
      if (!r.ok) throw new RateLimitedError(`howk-bridge ${route} is over ${s.rate_limit} requests per second`, r.retryAfterSec);
      await next();
    };

  app.get('/health', (c) => c.json({ status: 'ok' }));
  app.get('/ready', async (c) => {
    const check = async (name: string, fn: () => Promise<unknown>) => {
      try {
        await fn();
        return { name, ok: true };
      } catch (e) {
        return { name, ok: false, error: errorMessage(e) };
      }
    };
    const deps = await Promise.all([check('kafka', () => d.producer.ping()), check('redis', () => d.redis.ping().catch((e) => Promise.reject(toHowkError(e))))]);
    const ok = deps.every((x) => x.ok);
    return c.json({ status: ok ? 'ready' : 'not_ready', dependencies: deps }, ok ? 200 : 503);
  });

  const kafkaAuth = basicAuth(s.kafka_username, s.kafka_password!);
  app.get('/stats', kafkaAuth, (c) =>
    c.json({
      produce_calls: d.counters.produceCalls,
      produce_records: d.counters.produceRecords,
      produce_failures: d.counters.produceFailures,
      redis_requests: d.counters.redisRequests,
      redis_commands: d.counters.redisCommands,
    }),
  );
  app.use('/kafka/*', kafkaAuth, throttle('/kafka'), limit);
  app.route('/kafka', kafkaRoutes(d.producer, s.topics, d.counters));
  const redisAuth = bearerAuth(s.redis_token!);
  app.use('/redis', redisAuth, throttle('/redis'), redisLimit);
  app.use('/redis/*', redisAuth, throttle('/redis'), redisLimit);
  app.route('/redis', redisRoutes(d.redis, s.redis_commands, d.counters, s.redis_max_commands));
  return app;
};
