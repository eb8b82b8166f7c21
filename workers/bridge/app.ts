import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { Redis } from 'ioredis';
import { errorMessage } from '../../core/errors/errors';
import type { Logger } from '../../core/ports/logger';
import { toHowkError } from '../redis/exec';
import { basicAuth, bearerAuth } from './auth';
import type { BridgeSettings } from './config';
import type { BridgeCounters } from './counters';
import type { KafkaRestProducer } from './kafka-produce';
import { dialectError, kafkaRoutes } from './kafka-routes';
import { redisRoutes } from './redis-routes';

export type BridgeDeps = { settings: BridgeSettings; producer: KafkaRestProducer; redis: Redis; counters: BridgeCounters; log: Logger };

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
  const limit = bodyLimit({ maxSize: s.max_request_size, onError: (c) => c.json({ error: `request body exceeds ${s.max_request_size} bytes` }, 413) });

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
  app.use('/kafka/*', kafkaAuth, limit);
  app.route('/kafka', kafkaRoutes(d.producer, s.topics, d.counters));
  app.use('/redis', bearerAuth(s.redis_token!), limit);
  app.use('/redis/*', bearerAuth(s.redis_token!), limit);
  app.route('/redis', redisRoutes(d.redis, s.redis_commands, d.counters));
  return app;
};
