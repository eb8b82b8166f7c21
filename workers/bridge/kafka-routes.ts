import { Hono } from 'hono';
import { z } from 'zod';
import { ForbiddenError, NotFoundError, RateLimitedError, UnavailableError, ValidationError } from '../../core/errors/errors';
import type { BridgeCounters } from './counters';
import type { KafkaRestRecord } from '../../core/ports/kafka-rest';
import type { KafkaRestProducer } from '../kafka/rest-producer';

// The Upstash Kafka produce dialect (what @upstash/kafka sends): POST /produce with one
// record or an array; the answer lists {topic, partition, offset, timestamp} in order, and
// only after every record is acknowledged by all in-sync replicas (acks=all).

const RecordSchema = z.object({
  topic: z.string().min(1),
  value: z.string(),
  key: z.string().optional(),
  partition: z.number().int().min(0).optional(),
  timestamp: z.number().int().min(0).optional(),
  headers: z.array(z.object({ key: z.string(), value: z.string() })).optional(),
});
const BodySchema = z.union([RecordSchema, z.array(RecordSchema).min(1).max(10_000)]);

/** Upstash answers errors as JSON `{error}`; these are the dialect's status codes. */
export const dialectError = (e: unknown): { status: 400 | 403 | 404 | 429 | 500 | 503; error: string; retryAfter?: number } => {
  if (e instanceof RateLimitedError) return { status: 429, error: e.message, retryAfter: e.retryAfterSec };
  if (e instanceof ValidationError) return { status: 400, error: e.message };
  if (e instanceof NotFoundError) return { status: 404, error: e.message };
  if (e instanceof UnavailableError) return { status: 503, error: e.message, retryAfter: e.retryAfterSec };
  if (e instanceof ForbiddenError) return { status: 403, error: e.message };
  return { status: 500, error: 'internal error' };
};

export const kafkaRoutes = (producer: KafkaRestProducer, allowedTopics: readonly string[], counters: BridgeCounters) => {
  const app = new Hono();
  const allowed = new Set(allowedTopics);

  app.post('/produce', async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      throw new ValidationError('body is not valid JSON', 'body');
    }
    const parsed = BodySchema.safeParse(body);
    if (!parsed.success) throw ValidationError.fromZod(parsed.error);
    const records: KafkaRestRecord[] = Array.isArray(parsed.data) ? parsed.data : [parsed.data];
    const refused = records.find((r) => !allowed.has(r.topic));
    if (refused) throw new ForbiddenError(`topic ${refused.topic} is not open to the edge`);
    counters.produceCalls++;
    counters.produceRecords += records.length;
    try {
      return c.json(await producer.produce(records));
    } catch (e) {
      counters.produceFailures++;
      throw e;
    }
  });

  // Upstash admin dialect, limited to the topics the edge may use: {topic: partitions}.
  app.get('/topics', async (c) => c.json(await producer.topicPartitions([...allowed])));
  return app;
};
