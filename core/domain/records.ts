import { z } from 'zod';
import { AttemptOutcome, ScriptReason } from './status';

/** One per attempt on howk.results. */
export const DeliveryResultSchema = z.object({
  webhook_id: z.string(),
  config_id: z.string(),
  endpoint: z.string(),
  endpoint_hash: z.string(),
  attempt: z.number().int(),
  outcome: AttemptOutcome,
  success: z.boolean(),
  status_code: z.number().int().nullable(),
  error: z.string().nullable(),
  duration_ms: z.number(),
  next_retry_at: z.string().nullable(),
  timestamp: z.string(),
});
export type DeliveryResult = z.infer<typeof DeliveryResultSchema>;

export const DeadReason = z.enum(['unrecoverable', 'exhausted', 'invalid_record', 'blocked_destination', 'invalid_request', 'invalid_secret', ...ScriptReason.options]);
export type DeadReason = z.infer<typeof DeadReason>;

/** Terminal failures on howk.deadletter. The webhook is stored with secret headers redacted and without its secret. */
export const DeadLetterSchema = z.object({
  webhook_id: z.string(),
  config_id: z.string(),
  reason: z.string(),
  reason_type: DeadReason,
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  /** First 1 KB of the last response body. */
  last_response: z.string().nullable(),
  dead_at: z.string(),
  webhook: z.record(z.string(), z.unknown()),
});
export type DeadLetter = z.infer<typeof DeadLetterSchema>;
