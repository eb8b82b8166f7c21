import { z } from 'zod';

// The record of howk.messages (one partition, not compacted: retention as the other
// non-compacted topics): a message of the Svix API and the webhook each endpoint got. Key:
// `msg/<app id>/<message id>` (`messageKey`); every api instance keeps the latest of each
// application (core/apps/table.ts). No tombstone is written. A record under a key that is not
// its own is malformed.

/** One per message on howk.messages (key `msg/<app id>/<message id>`): what GET .../msg answers, and the webhook of each endpoint it reached. */
export const MessageRecordSchema = z.object({
  kind: z.literal('message'),
  id: z.string(),
  app_id: z.string(),
  event_type: z.string(),
  event_id: z.string().nullable(),
  channels: z.array(z.string()).nullable(),
  /** Raw JSON text, as sent. */
  payload: z.string(),
  timestamp: z.string(),
  /** `manual`: made by a resend (Svix's triggerType 1), not by the message itself. */
  deliveries: z.array(z.object({ endpoint_id: z.string(), webhook_id: z.string(), manual: z.boolean().optional() })),
});
export type MessageRecord = z.infer<typeof MessageRecordSchema>;

export const messageKey = (appId: string, id: string): string => `msg/${appId}/${id}`;

export const messageKeyOf = (r: Pick<MessageRecord, 'app_id' | 'id'>): string => messageKey(r.app_id, r.id);

export const encodeMessage = (r: MessageRecord): string => JSON.stringify(r);

/** A message read back, or undefined when it is not one or sits under a key that is not its own. */
export const decodeMessage = (key: string, value: string): MessageRecord | undefined => {
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch {
    return undefined;
  }
  const p = MessageRecordSchema.safeParse(v);
  return p.success && messageKeyOf(p.data) === key ? p.data : undefined;
};
