import type { Webhook } from '../domain/webhook';

/**
 * The fields a new webhook's record can have, in the order webhookOf (enqueue.ts) sets them,
 * then what the enqueuer adds (trace, awaited_by). `payload` goes last, spliced in raw.
 */
export const ENQUEUED_FIELDS = [
  'id',
  'config_id',
  'endpoint',
  'endpoint_hash',
  'payload',
  'headers',
  'body_base64',
  'content_type',
  'idempotency_key',
  'signing_secret',
  'delivery_headers',
  'delivery_query_params',
  'attempt',
  'max_attempts',
  'deferrals',
  'created_at',
  'scheduled_at',
  'trace',
  'awaited_by',
] as const;

const isEmpty = (o: object): boolean => {
  for (const _ in o) return false;
  return true;
};

/**
 * encodeWebhook's text for the webhooks of one enqueue request (built by webhookOf), written
 * out: the items of a request share their config, mostly their endpoint and their stamp, so
 * those are stringified once per request instead of once per record, and no copy of the
 * webhook without its payload is made. Only for webhooks with ENQUEUED_FIELDS (a new webhook).
 */
export const enqueuedRecords = () => {
  let configId: string | undefined;
  let configJson = '';
  let endpoint: string | undefined;
  let endpointJson = '';
  let stamp: string | undefined;
  let stampJson = '';
  return (w: Webhook): string => {
    if (w.config_id !== configId) configJson = JSON.stringify((configId = w.config_id));
    if (w.endpoint !== endpoint) endpointJson = JSON.stringify((endpoint = w.endpoint));
    let s = `{"id":${JSON.stringify(w.id)},"config_id":${configJson},"endpoint":${endpointJson},"endpoint_hash":${JSON.stringify(w.endpoint_hash)},"headers":${isEmpty(w.headers) ? '{}' : JSON.stringify(w.headers)}`;
    if (w.body_base64 !== undefined) s += `,"body_base64":${JSON.stringify(w.body_base64)},"content_type":${JSON.stringify(w.content_type)}`;
    if (w.idempotency_key !== undefined) s += `,"idempotency_key":${JSON.stringify(w.idempotency_key)}`;
    if (w.signing_secret !== undefined) s += `,"signing_secret":${JSON.stringify(w.signing_secret)}`;
    if (w.delivery_headers !== undefined) s += `,"delivery_headers":${JSON.stringify(w.delivery_headers)}`;
    if (w.delivery_query_params !== undefined) s += `,"delivery_query_params":${JSON.stringify(w.delivery_query_params)}`;
    // created_at and scheduled_at are one stamp at enqueue.
    if (w.created_at !== stamp) stampJson = JSON.stringify((stamp = w.created_at));
    const scheduled = w.scheduled_at === stamp ? stampJson : JSON.stringify(w.scheduled_at);
    s += `,"attempt":${w.attempt},"max_attempts":${w.max_attempts},"deferrals":${w.deferrals},"created_at":${stampJson},"scheduled_at":${scheduled}`;
    if (w.trace !== undefined) s += `,"trace":${JSON.stringify(w.trace)}`;
    if (w.awaited_by !== undefined) s += `,"awaited_by":${JSON.stringify(w.awaited_by)}`;
    return `${s},"payload":${w.payload}}`;
  };
};
