import { ValidationError } from '../errors/errors';
import { enqueueItemSchema, type EnqueueItem } from '../domain/enqueue';

type ItemSchema = ReturnType<typeof enqueueItemSchema>;
type Templates = { delivery_headers?: Record<string, string>; delivery_query_params?: Record<string, string> };

/**
 * The webhooks a transformer run posted, as enqueue items: each meets the limits of a batch
 * enqueue (header count and sizes, endpoint length), or the whole run is refused with the
 * first problem named. `templates` are the script's `_delivery_*` templates (name.json), to
 * which a `howk.post`'s own ones are added (they win); the worker resolves them at send time,
 * whichever runtime enqueued the webhook.
 */
export const transformerItems = (name: string, webhooks: EnqueueItem[], schema: ItemSchema, templates: Templates): EnqueueItem[] =>
  webhooks.map((w, i) => {
    const r = schema.safeParse({ endpoint: w.endpoint, payload: true, headers: w.headers, idempotency_key: w.idempotency_key, max_attempts: w.max_attempts });
    if (!r.success) throw ValidationError.fromZod(r.error, { at: `webhooks.${i}`, prefix: `transformer ${name} posted an invalid webhook: ` });
    const dh = { ...templates.delivery_headers, ...w.delivery_headers };
    const dq = { ...templates.delivery_query_params, ...w.delivery_query_params };
    return {
      endpoint: w.endpoint,
      payload: w.payload,
      headers: w.headers,
      ...(w.idempotency_key ? { idempotency_key: w.idempotency_key } : {}),
      ...(w.max_attempts ? { max_attempts: w.max_attempts } : {}),
      ...(Object.keys(dh).length ? { delivery_headers: dh } : {}),
      ...(Object.keys(dq).length ? { delivery_query_params: dq } : {}),
    };
  });
