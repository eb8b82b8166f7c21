import type { Context } from 'hono';
import { z } from 'zod';
import { messageWebhookKey } from '../../apps/endpoint-rules';
import { secretsText } from '../../apps/messages';
import type { EndpointRecord } from '../../records/application';
import { isMediaType } from '../../domain/enqueue';
import { endpointHash } from '../../domain/ids';
import { WebhookState, WebhookStatusSchema } from '../../domain/status';
import { ConflictError, NotFoundError, ValidationError, errorMessage } from '../../errors/errors';
import { statusView } from '../../pipeline/redact';
import { ID_CURSOR } from '../../reconcile/listing';
import { reaches, type ApiKeyRecord } from '../../security/api-keys';
import { toBase64 } from '../../signing/encoding';
import type { ApiDeps } from '../deps';
import type { Route } from '../route';
import { limitBody, readLimited } from './body-limit';
import { checkOutstanding } from './enqueue-wait';
import { StatusView } from './status';
import { LIMIT, listBody, pageOf, statusRow } from './webhooks';

// Named hooks (docs/SVIX-API.md, "Named hooks"): POST /hooks/<endpoint uid> delivers the
// request's bytes, with its Content-Type, to that endpoint of an application, signed with the
// endpoint's secret. The application is the `app` query parameter or, without it, the one config
// the key is bound to; an application the key does not reach answers 404, as if absent.

const NAME = z.string().describe('uid (or id) of an endpoint of the application');
const APP = z.string().max(256).optional().describe('application id or uid; optional for a key bound to exactly one config (that one is the application)');
const HookParams = z.object({ name: NAME });
const DeliveryParams = HookParams.extend({ id: z.string() });
const AppQuery = () => z.object({ app: APP });
const ListQuery = () => z.object({ app: APP, state: WebhookState.optional(), cursor: z.string().regex(ID_CURSOR).optional(), limit: LIMIT });
const base = { tag: 'hooks', config: { from: 'handler', name: 'app' } } as const;
const ERR = { $ref: '#/components/schemas/Error' };
const errors = {
  '400': { description: 'no app query parameter and the key is not bound to exactly one config; or a bad query', schema: ERR },
  '404': { description: 'no such application (or one the key does not reach), or no endpoint of that uid in it', schema: ERR },
};

/** Who the body goes to when none is said: a sender that says no Content-Type sent bytes. */
const DEFAULT_TYPE = 'application/octet-stream';

/** The application a hook request acts in, and its endpoint named `:name`. */
const hookOf = (d: ApiDeps, c: Context): { appId: string; endpoint: EndpointRecord } => {
  const key = c.get('apiKey') as ApiKeyRecord | undefined;
  const asked = c.req.query('app');
  const name = c.req.param('name')!;
  let appId: string;
  if (asked !== undefined) {
    const id = d.apps!.store.resolveApp(asked);
    if (id === null || (key !== undefined && !reaches(key, id))) throw new NotFoundError(`application ${asked}`);
    appId = id;
  } else if (key?.config_ids?.length === 1) {
    appId = key.config_ids[0]!;
  } else {
    const who = key ? `API key ${key.id} is not bound to exactly one config` : 'API keys are off';
    throw new ValidationError(`the app query parameter is required (${who}): /hooks/${name}?app=<application id or uid>`, 'app');
  }
  const app = d.apps!.store.app(appId);
  const endpoint = d.apps!.store.table.endpoint(app.id, name);
  if (!endpoint) throw new NotFoundError(`hook ${name} (no endpoint of uid ${name} in application ${app.uid ?? app.id})`);
  return { appId: app.id, endpoint };
};

/** The application's outstanding webhooks (accepted, not yet delivered or dead) when this one was accepted; null when unknown. */
const position = async (d: ApiDeps, appId: string): Promise<number | null> => {
  if (!d.outstanding) return null;
  try {
    return await d.outstanding.countOutstanding(appId);
  } catch (e) {
    d.log.warn('outstanding count unavailable: hook position unknown', { error: errorMessage(e) });
    return null;
  }
};

const location = (c: Context, id: string) => {
  const app = c.req.query('app');
  const q = app === undefined ? '' : `?app=${encodeURIComponent(app)}`;
  return `/hooks/${encodeURIComponent(c.req.param('name')!)}/deliveries/${encodeURIComponent(id)}${q}`;
};

const HookAccepted = z.object({
  id: z.string().describe('the webhook id'),
  app_id: z.string(),
  endpoint_id: z.string(),
  position: z.number().int().nullable().describe("the application's webhooks accepted and not yet delivered or dead when this one was accepted (null: not counted here)"),
});

/** Raw bodies travel base64 in the record: 3 bytes in 4 characters, so a hook body is held to 3/4 of api.max_request_size. */
export const hookBodyMax = (maxRequest: number): number => Math.floor((maxRequest * 3) / 4);

export const hookRoutes: Route[] = [
  {
    ...base,
    method: 'post',
    path: '/hooks/:name',
    summary: "Deliver the request body, byte for byte with its Content-Type, to the application's endpoint of that uid, signed with its secret",
    access: 'enqueue',
    needs: ['apps'],
    request: { params: HookParams, query: AppQuery, body: () => ({ description: 'any body; delivered exactly as sent' }), media: 'any' },
    responses: {
      '202': { description: 'accepted (durably in Kafka)', schema: HookAccepted, headers: { Location: { schema: { type: 'string' } } } },
      '409': { description: 'the endpoint is disabled (code endpoint_disabled); nothing enqueued', schema: ERR },
      '413': { description: 'body over 3/4 of api.max_request_size', schema: ERR },
      '429': { description: "the application's config has api.max_outstanding_per_config webhooks outstanding (Retry-After); nothing enqueued", schema: ERR },
      '503': { description: 'Kafka unavailable; nothing enqueued', schema: ERR },
      ...errors,
    },
    handler: (d) => {
      const max = hookBodyMax(d.config.api.max_request_size);
      return [
        limitBody(max),
        async (c) => {
          const type = c.req.header('content-type')?.trim() || DEFAULT_TYPE;
          if (!isMediaType(type)) throw new ValidationError(`Content-Type ${JSON.stringify(type.slice(0, 80))} is not a media type such as text/plain`, 'content-type');
          const bytes = await readLimited(c, max);
          const { appId, endpoint: e } = hookOf(d, c);
          if (e.disabled) throw new ConflictError('endpoint_disabled', `hook ${c.req.param('name')!}: endpoint ${e.id} is disabled; nothing was enqueued`);
          await checkOutstanding(d, appId);
          const ahead = await position(d, appId);
          // The svix: key lets the worker dead-letter it if the endpoint is disabled before it goes (core/apps/endpoint-rules.ts).
          const [r] = await d.enqueue(appId, [
            {
              endpoint: e.url,
              payload: 'null',
              raw: { content_type: type, body_base64: toBase64(bytes) },
              headers: e.headers,
              idempotency_key: messageWebhookKey(`hook_${crypto.randomUUID()}`, e.id),
              signing_secret: secretsText(await d.apps!.store.signingSecrets(e)),
              ...(e.max_attempts ? { max_attempts: e.max_attempts } : {}),
            },
          ]);
          c.header('Location', location(c, r!.webhook_id));
          return c.json({ id: r!.webhook_id, app_id: appId, endpoint_id: e.id, position: ahead }, 202);
        },
      ];
    },
  },
  {
    ...base,
    method: 'get',
    path: '/hooks/:name/deliveries',
    summary: "The webhooks of the application to that endpoint's URL, newest first: state, attempts, last error, next retry",
    access: 'read',
    needs: ['apps', 'listing'],
    request: { params: HookParams, query: ListQuery },
    responses: { '200': { description: 'one page', schema: pageOf(WebhookStatusSchema.omit({ updated_at_ns: true })) }, ...errors },
    handler: (d) => [
      async (c) => {
        const q = ListQuery().safeParse(c.req.query());
        if (!q.success) throw ValidationError.fromZod(q.error, { root: 'query' });
        const { appId, endpoint } = hookOf(d, c);
        const page = await d.listing!.listWebhooks({
          configId: appId,
          endpointHash: await endpointHash(endpoint.url),
          ...(q.data.state ? { state: q.data.state } : {}),
          ...(q.data.cursor ? { cursor: q.data.cursor } : {}),
          limit: q.data.limit ?? 50,
        });
        return c.json(listBody(page.items.map(statusRow), page.next));
      },
    ],
  },
  {
    ...base,
    method: 'get',
    path: '/hooks/:name/deliveries/:id',
    summary: 'One webhook of the hook: state, attempts, last error, next retry and its latest attempts',
    access: 'read',
    needs: ['apps'],
    request: { params: DeliveryParams, query: AppQuery },
    responses: { '200': { description: 'status', schema: StatusView }, ...errors },
    handler: (d) => [
      async (c) => {
        const { appId, endpoint } = hookOf(d, c);
        const id = c.req.param('id')!;
        const s = await d.hot.getStatus(id);
        // Another application's webhook, or one to another URL, is not this hook's.
        if (!s || s.config_id !== appId || s.endpoint_hash !== (await endpointHash(endpoint.url))) throw new NotFoundError(`delivery ${id} of hook ${c.req.param('name')!}`);
        const { updated_at_ns: _ns, ...view } = s;
        return c.json(statusView(view));
      },
    ],
  },
];
