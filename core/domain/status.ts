import { z } from 'zod';

export const WebhookState = z.enum(['pending', 'retrying', 'delivered', 'failed', 'exhausted']);
export type WebhookState = z.infer<typeof WebhookState>;

export const TERMINAL_STATES: ReadonlySet<WebhookState> = new Set(['delivered', 'failed', 'exhausted']);
/** Accepted and not yet terminal: what counts as outstanding. */
export const OUTSTANDING_STATES: readonly WebhookState[] = ['pending', 'retrying'];

/**
 * Failures while preparing the request, before anything is sent: the delivery script (core/lua,
 * the LuaError code as the reason) and the ${VAR} secret templates (a variable outside
 * lua.secret_env_allowlist, or unset on the worker).
 */
export const ScriptReason = z.enum([
  'script_not_found',
  'script_syntax_error',
  'script_runtime_error',
  'script_timeout',
  'script_memory_limit',
  'secret_not_allowed',
  'secret_missing',
  'secret_host_not_allowed',
  'credential_host_not_allowed',
  // A Svix API endpoint disabled after the webhook was queued for it (core/apps/endpoint-rules.ts).
  'endpoint_disabled',
]);
export type ScriptReason = z.infer<typeof ScriptReason>;

export const AttemptOutcome = z.enum([
  'delivered',
  'retry',
  'deferred',
  'unrecoverable',
  'exhausted',
  'blocked_destination',
  'invalid_request',
  'invalid_secret',
  ...ScriptReason.options,
]);
export type AttemptOutcome = z.infer<typeof AttemptOutcome>;

/** How much of a response body an attempt record keeps (GET /webhooks/:id/status, the console's Inspector). */
export const RESPONSE_SNIPPET_BYTES = 256;

/**
 * One HTTP attempt, as kept in the status history (the last 20), or a hold that spent no
 * attempt (`outcome: 'held'`: an open circuit or the endpoint's rate limit parked it).
 * The optional fields are absent from records written before they existed.
 */
export const AttemptRecord = z.object({
  attempt: z.number().int(),
  at: z.string(),
  outcome: z.union([AttemptOutcome, z.literal('held')]),
  status_code: z.number().int().nullable(),
  error: z.string().nullable(),
  duration_ms: z.number(),
  next_retry_at: z.string().nullable().optional().describe('When the next try was scheduled (null: none)'),
  deferrals: z.number().int().optional().describe('429 deferrals spent once this attempt was decided'),
  retry_after: z.string().optional().describe("The response's Retry-After header, as sent"),
  response: z.string().optional().describe(`The first ${RESPONSE_SNIPPET_BYTES} bytes of the response body`),
  held: z.enum(['circuit_open', 'rate_limited', 'paused']).optional().describe("Why a 'held' entry spent no attempt ('paused': a pause met while Redis was unreachable)"),
  signed: z.record(z.string(), z.string()).optional().describe('webhook-timestamp and the signature headers as sent (HMAC values; never the secret)'),
});
export type AttemptRecord = z.infer<typeof AttemptRecord>;

export const WebhookStatusSchema = z.object({
  webhook_id: z.string(),
  config_id: z.string(),
  endpoint: z.string(),
  endpoint_hash: z.string(),
  state: WebhookState,
  attempts: z.number().int(),
  max_attempts: z.number().int(),
  created_at: z.string(),
  last_attempt_at: z.string().nullable(),
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  next_retry_at: z.string().nullable(),
  dead_reason: z.string().nullable().optional(),
  /** Why delivery is held back right now (no attempt is spent while held). */
  held: z.enum(['circuit_open', 'rate_limited', 'paused', 'slow_lane']).nullable().optional(),
  replay_of: z.string().optional(),
  updated_at_ns: z.string(),
});
export type WebhookStatus = z.infer<typeof WebhookStatusSchema>;

export type WebhookStatusView = WebhookStatus & { history: AttemptRecord[] };

export const HISTORY_LIMIT = 20;
