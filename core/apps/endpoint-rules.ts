import type { AppTable } from './table';
import type { EndpointPolicy } from '../policy/endpoint-policy';

// What the worker asks of the Svix API's model before it sends a webhook a message made:
// has its endpoint been disabled since? The webhook names its endpoint by its idempotency key
// (`svix:<msg id>:<endpoint id>`, core/apps/messages.ts), under its application's config.

const PREFIX = 'svix:';

/** The idempotency key of the webhook a message makes for one endpoint. */
export const messageWebhookKey = (msgId: string, endpointId: string): string => `${PREFIX}${msgId}:${endpointId}`;

/** The endpoint id a webhook made by a message names in its key (the key's last part), or undefined for any other webhook. */
const endpointIdOf = (w: { idempotency_key?: string }): string | undefined => {
  const key = w.idempotency_key;
  return key === undefined || !key.startsWith(PREFIX) ? undefined : key.slice(key.lastIndexOf(':') + 1);
};

/**
 * Why the webhook's endpoint no longer takes it, or undefined: deleted, or disabled. Only a disabling the webhook did
 * not see counts: the endpoint's record says disabled and was written at or after the webhook
 * was made. A record older than the webhook is this replica lagging behind the api that made it
 * (which saw the endpoint enabled), so the webhook goes.
 */
export const disabledEndpointCheck =
  (table: AppTable) =>
  (w: { config_id: string; idempotency_key?: string; created_at: string }): string | undefined => {
    const id = endpointIdOf(w);
    if (id === undefined) return undefined;
    const e = table.endpoint(w.config_id, id);
    // Endpoint ids are never reused: a deletion read is final, whatever the webhook's age.
    if (!e) return table.endpointDeleted(w.config_id, id) ? `endpoint ${id} of application ${w.config_id} was deleted` : undefined;
    if (!e.disabled || e.updated_at < w.created_at) return undefined;
    return `endpoint ${e.id} of application ${e.app_id} was disabled at ${e.updated_at}`;
  };

/** The Svix endpoint a webhook was made for and its throttleRate (requests per second), if it has one. */
export type EndpointThrottle = { endpointId: string; rate: number };

/**
 * Read at each attempt, not at enqueue: a throttleRate set, changed or removed later reaches
 * the webhooks already queued. The bucket is the endpoint's own (not its URL's): another
 * tenant's endpoint at the same URL keeps its own pace.
 */
export const endpointThrottleOf =
  (table: AppTable) =>
  (w: { config_id: string; idempotency_key?: string }): EndpointThrottle | undefined => {
    const id = endpointIdOf(w);
    const e = id === undefined ? undefined : table.endpoint(w.config_id, id);
    if (!e || e.throttle_rate === null || e.throttle_rate <= 0) return undefined;
    return { endpointId: e.id, rate: e.throttle_rate };
  };

/**
 * Read at each attempt, like the throttle rate: a change reaches webhooks already queued.
 * Undefined for a webhook no message made, or an endpoint with none of its own.
 */
export const endpointPolicyOf =
  (table: AppTable) =>
  (w: { config_id: string; idempotency_key?: string }): EndpointPolicy | undefined => {
    const id = endpointIdOf(w);
    const e = id === undefined ? undefined : table.endpoint(w.config_id, id);
    if (!e || (e.timeout_ms == null && e.max_backoff_ms == null && e.max_concurrency == null)) return undefined;
    const p: EndpointPolicy = {};
    if (e.timeout_ms != null) p.timeoutMs = e.timeout_ms;
    if (e.max_backoff_ms != null) p.maxBackoffMs = e.max_backoff_ms;
    if (e.max_concurrency != null) p.maxConcurrency = e.max_concurrency;
    return p;
  };
