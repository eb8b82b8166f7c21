import { z } from 'zod';
import { objectMembers, slice } from './raw-json';

/**
 * A webhook as it travels on howk.pending / howk.slow (snake_case, HOWK compatible).
 * `payload` holds the raw JSON text fixed at enqueue: it is spliced into the record
 * as JSON (not as a string) and cut out again byte for byte.
 */
export const WebhookSchema = z.object({
  id: z.string().min(1),
  config_id: z.string().min(1),
  endpoint: z.string().min(1),
  endpoint_hash: z.string(),
  payload: z.string(),
  headers: z.record(z.string(), z.string()).default({}),
  idempotency_key: z.string().optional(),
  /** Encrypted envelope (core/signing/secret-box), never plaintext. */
  signing_secret: z.string().optional(),
  attempt: z.number().int().min(0),
  max_attempts: z.number().int().min(1),
  /** 429 + Retry-After deferrals so far: they spend no attempt but have their own budget. */
  deferrals: z.number().int().min(0).default(0),
  created_at: z.string(),
  scheduled_at: z.string(),
  script_hash: z.string().optional(),
  replay_of: z.string().optional(),
  /** Ids of the pause drains that moved it back to the pending topic (the latest few): it passes their pause. */
  released_by: z.array(z.string()).optional(),
  /** The api instance waiting for its first attempt's outcome (?wait=): the worker tells it (core/ports/outcome-bus.ts). Never sent. */
  awaited_by: z.string().optional(),
  /** `${VAR}` templates (not values) the worker resolves at send time from allow-listed env variables. */
  delivery_headers: z.record(z.string(), z.string()).optional(),
  delivery_query_params: z.record(z.string(), z.string()).optional(),
  /** W3C traceparent of its enqueue span (tracing.enabled): retries and the slow lane keep its trace. */
  trace: z.string().optional(),
});
export type Webhook = z.infer<typeof WebhookSchema>;

/** Serializes with the payload spliced in raw. */
export const encodeWebhook = (w: Webhook): string => {
  const { payload, ...rest } = w;
  const head = JSON.stringify(rest);
  return `${head.slice(0, -1)},"payload":${payload}}`;
};

/** Parses a webhook record, keeping the payload's bytes exactly as they were enqueued. */
export const decodeWebhook = (text: string): Webhook => {
  const span = objectMembers(text, 0).get('payload');
  if (!span) throw new SyntaxError('webhook record has no payload');
  // Parsing the whole record also proves the payload is valid JSON; its bytes come from the span.
  const obj = JSON.parse(text) as Record<string, unknown>;
  obj.payload = slice(text, span);
  return WebhookSchema.parse(obj);
};
