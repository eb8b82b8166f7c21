import { z } from 'zod';
import { ScriptReason } from '../domain/status';
import { iso } from '../domain/time';
import { errorMessage } from '../errors/errors';
import { objectMembers, slice } from '../domain/raw-json';
import { decodeWebhook, type Webhook } from './webhook';

// The record of howk.deadletter (not compacted: no tombstone), one per webhook that failed
// for good. Key: the webhook id (`deadLetterKey`); none for an undecodable pending record.
// Value: a DeadLetter with the redacted webhook spliced in raw (`encodeDeadLetter`), or, for
// a record nothing could decode, `invalidRecordValue` (reason_type invalid_record, the first
// 1 KB of the raw value). Read back leniently (`readDeadLetter`: records of any version
// index and rebuild) and its webhook strictly (`deadLetterWebhook`: a retry sends it again).

export const deadLetterKey = (webhookId: string): string => webhookId;

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

/** A dead letter's text: the head's fields, then the webhook's record spliced in raw. */
export const encodeDeadLetter = (head: Omit<DeadLetter, 'webhook'>, webhookRecord: string): string => `${JSON.stringify(head).slice(0, -1)},"webhook":${webhookRecord}}`;

/**
 * The dead letter of a record nothing can decode: a pending record (no key, no webhook id),
 * or a webhook's retry data (`from`: its id, and what was being read).
 */
export const invalidRecordValue = (value: string | null, e: unknown, at: number, from?: { webhookId: string; what: string }): string =>
  JSON.stringify({
    ...(from ? { webhook_id: from.webhookId } : {}),
    reason_type: 'invalid_record',
    reason: `${from?.what ?? 'undecodable record'}: ${errorMessage(e)}`,
    dead_at: iso(at),
    raw: (value ?? '').slice(0, 1024),
  });

/** A dead letter's fields as written by any version: unchecked, for the index and the rebuild to check one by one. */
export type RawDeadLetter = {
  webhook_id?: unknown;
  config_id?: unknown;
  reason_type?: unknown;
  dead_at?: unknown;
  last_status_code?: unknown;
  last_error?: unknown;
  webhook?: Record<string, unknown>;
};

/** The record's fields, or null when it is not a JSON object. */
export const readDeadLetter = (record: string): RawDeadLetter | null => {
  try {
    const v = JSON.parse(record) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as RawDeadLetter) : null;
  } catch {
    return null;
  }
};

/** The webhook stored in a dead-letter record, payload bytes untouched; throws when there is none. */
export const deadLetterWebhook = (record: string): Webhook => {
  const span = objectMembers(record, 0).get('webhook');
  if (!span) throw new SyntaxError('dead letter holds no webhook');
  return decodeWebhook(slice(record, span));
};
