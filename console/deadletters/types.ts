import type { DeadReason } from '../../core/records/dead-letter';
import type { ReplayJobView } from '../../core/reconcile/replay-jobs';

// What GET /deadletter and the bulk replay routes answer (docs/API.md). The server's own types,
// imported as types only: the reason filter's list is written out here because the one in core
// is a zod enum (zod would join the console's bundle) in another order than the filter offers.

/** The reason filter's choices, in the order offered: checked against core's DeadReason both ways. */
export const REASONS = [
  'exhausted',
  'unrecoverable',
  'invalid_record',
  'blocked_destination',
  'invalid_request',
  'invalid_secret',
  'script_not_found',
  'script_syntax_error',
  'script_runtime_error',
  'script_timeout',
  'script_memory_limit',
  'secret_not_allowed',
  'secret_missing',
  'secret_host_not_allowed',
  'credential_host_not_allowed',
  'endpoint_disabled',
] as const satisfies readonly DeadReason[];

type Unlisted = Exclude<DeadReason, (typeof REASONS)[number]>;
/** A reason core adds and REASONS lacks fails type checking here. */
export const EVERY_REASON_LISTED: [Unlisted] extends [never] ? true : never = true;

export type { DeadLetterRow } from '../../core/http/routes/deadletter';

/** A bulk replay job as GET /deadletter/replay/:job answers it (the server's own type). */
export type Job = ReplayJobView;
