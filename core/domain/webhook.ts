import { z } from 'zod';

/**
 * A webhook as it travels on howk.pending / howk.slow (snake_case, HOWK compatible).
 * `payload` holds the raw JSON text fixed at enqueue: it is spliced into the record
 * as JSON (not as a string) and cut out again byte for byte. The record itself (key,
 * encoding, decoding) is core/records/webhook.ts; the model stays here, below policy/.
 */
export const WebhookSchema = z.object({
  id: z.string().min(1),
  config_id: z.string().min(1),
  endpoint: z.string().min(1),
  endpoint_hash: z.string(),
  payload: z.string(),
  headers: z.record(z.string(), z.string()).default({}),
  /** A non-JSON body (payload is then `null`): its bytes in base64, delivered and signed exactly, with content_type. */
  body_base64: z.string().optional(),
  content_type: z.string().optional(),
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

/** The topic a webhook is delivered from: howk.pending (fast) or howk.slow, where a slow endpoint's webhooks go so they wait apart. */
export type Lane = 'fast' | 'slow';
