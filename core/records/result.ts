import { z } from 'zod';
import { AttemptOutcome, type AttemptRecord } from '../domain/status';
import type { Webhook } from '../domain/webhook';

// The record of howk.results (not compacted: no tombstone), one per attempt. Key: the
// webhook id (`resultKey`). Value: a DeliveryResult, as JSON.stringify of the schema's object
// would write it, byte for byte (`encodeResult` writes the text without building the object).

export const resultKey = (webhookId: string): string => webhookId;

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

/** A result record read back; throws when it is not one. */
export const decodeResult = (value: string): DeliveryResult => DeliveryResultSchema.parse(JSON.parse(value));

// The `"config_id":…,"endpoint":…,"endpoint_hash":…` part of a result, by endpoint: the same
// for every delivery of a config lane, so it is escaped once, not per delivery. Bounded.
const places = new Map<string, { config: string; hash: string; json: string }>();
const placeJson = (w: Webhook): string => {
  const p = places.get(w.endpoint);
  if (p && p.config === w.config_id && p.hash === w.endpoint_hash) return p.json;
  if (places.size >= 10_000) places.clear();
  const json = `"config_id":${JSON.stringify(w.config_id)},"endpoint":${JSON.stringify(w.endpoint)},"endpoint_hash":${JSON.stringify(w.endpoint_hash)}`;
  places.set(w.endpoint, { config: w.config_id, hash: w.endpoint_hash, json });
  return json;
};
const jsonOrNull = (v: string | null): string => (v === null ? 'null' : JSON.stringify(v));

/** The howk.results record of an attempt: JSON.stringify of its DeliveryResult, byte for byte (the same keys in the same order), without building the object. */
export const encodeResult = (
  w: Webhook,
  outcome: AttemptRecord['outcome'],
  success: boolean,
  status: number | null,
  error: string | null,
  durationMs: number,
  next: string | null,
  at: string,
): string =>
  `{"webhook_id":${JSON.stringify(w.id)},${placeJson(w)},"attempt":${JSON.stringify(w.attempt + 1)},"outcome":${JSON.stringify(outcome)},"success":${success},"status_code":${JSON.stringify(status)},"error":${jsonOrNull(error)},"duration_ms":${JSON.stringify(durationMs)},"next_retry_at":${jsonOrNull(next)},"timestamp":${JSON.stringify(at)}}`;
