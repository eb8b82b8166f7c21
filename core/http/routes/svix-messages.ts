import type { Context } from 'hono';
import { z } from 'zod';
import { messageIn } from '../../apps/schemas';
import { memberSpan, slice } from '../../domain/raw-json';
import { NotFoundError } from '../../errors/errors';
import type { ApiDeps } from '../deps';
import type { Route } from '../route';
import { limitBody } from './body-limit';
import { checkOutstanding } from './enqueue-wait';
import { appConfig, AppParam, ContentListQuery, listOf, MessageOutSchema, messageOut, page, readSvixBody, store, SvixError, withContent, WithContentQuery } from './svix-common';
import { attemptsOf, AttemptOutSchema } from './svix-attempts';

// Messages of the Svix API: one Howk webhook per endpoint that listens (core/apps/messages.ts).

const errors = {
  '401': { description: 'no or bad API key', schema: SvixError },
  '404': { description: 'no such application or message (or one the key does not reach)', schema: SvixError },
};
const ofApp = { tag: 'svix', needs: ['apps'], config: appConfig, request: { params: AppParam } } as const;
const MsgParams = AppParam.extend({ msg: z.string() });
/** Messages whose statuses one listing of an endpoint's attempts reads, at most (each is a hot-state read). */
const MAX_SCANNED = 250;

const message = (d: ApiDeps, c: Context) => {
  const app = store(d).app(c.req.param('app')!);
  const m = d.apps!.store.table.message(app.id, c.req.param('msg')!);
  if (!m) throw new NotFoundError(`message ${c.req.param('msg')!} (an application keeps its latest svix.messages_kept_per_app)`);
  return m;
};

export const svixMessageRoutes: Route[] = [
  {
    ...ofApp,
    method: 'post',
    path: '/api/v1/app/:app/msg',
    summary: 'Send a message: one webhook per enabled endpoint whose filterTypes and channels match, all accepted or none',
    access: 'enqueue',
    request: { ...ofApp.request, query: WithContentQuery, body: messageIn, bodyRequired: true },
    responses: {
      '202': { description: 'accepted (durably in Kafka); the same eventId again answers the first message', schema: MessageOutSchema },
      '413': { description: 'over api.max_request_size' },
      '429': { description: "the application's config has api.max_outstanding_per_config webhooks outstanding (Retry-After); nothing sent" },
      '422': { description: 'invalid body; detail names each field', schema: SvixError },
      '503': { description: 'Kafka unavailable; nothing was sent' },
      ...errors,
    },
    handler: (d) => [
      limitBody(d.config.api.max_request_size),
      async (c) => {
        const { value, text } = await readSvixBody(c, messageIn(d.config), d.config.api.max_request_size);
        const app = store(d).app(c.req.param('app')!);
        // The application's webhooks count towards its config's bound like any enqueue's.
        await checkOutstanding(d, app.id);
        const { message: m, created } = await d.apps!.messages.create(app.id, value, slice(text, memberSpan(text, 0, 'payload')!));
        if (created) d.log.debug('message sent', { app_id: m.app_id, msg_id: m.id, endpoints: m.deliveries.length });
        return c.json(messageOut(m, withContent(c)), 202);
      },
    ],
  },
  {
    ...ofApp,
    method: 'get',
    path: '/api/v1/app/:app/msg',
    summary: "List an application's latest messages, newest first",
    access: 'read',
    request: { ...ofApp.request, query: ContentListQuery },
    responses: {
      '200': { description: 'one page', schema: listOf(MessageOutSchema) },
      '422': { description: 'a bad query parameter (limit, iterator, order, with_content)', schema: SvixError },
      ...errors,
    },
    handler: (d) => [
      (c) => {
        const app = store(d).app(c.req.param('app')!);
        const content = withContent(c);
        const p = page(c, store(d).table.messagesOf(app.id), (m) => m.id, true);
        return c.json({ ...p, data: p.data.map((m) => messageOut(m, content)) });
      },
    ],
  },
  {
    ...ofApp,
    method: 'get',
    path: '/api/v1/app/:app/msg/:msg',
    summary: 'Get a message',
    access: 'read',
    request: { params: MsgParams, query: WithContentQuery },
    responses: { '200': { description: 'the message', schema: MessageOutSchema }, '422': { description: 'a bad with_content', schema: SvixError }, ...errors },
    handler: (d) => [(c) => c.json(messageOut(message(d, c), withContent(c)))],
  },
  {
    ...ofApp,
    method: 'post',
    path: '/api/v1/app/:app/msg/:msg/endpoint/:endpoint/resend',
    summary: 'Resend a message to one endpoint it was sent to: one more webhook, with the endpoint as it is now',
    access: 'enqueue',
    request: { params: MsgParams.extend({ endpoint: z.string() }) },
    responses: {
      '202': { description: 'accepted (durably in Kafka); the same idempotency-key again is the same webhook', schema: z.object({}) },
      '409': { description: 'the endpoint is disabled', schema: SvixError },
      '429': { description: "the application's config has api.max_outstanding_per_config webhooks outstanding (Retry-After); nothing sent" },
      '503': { description: 'Kafka unavailable' },
      ...errors,
      '404': { description: 'no such application, message or endpoint, the message was never sent to that endpoint, or an application the key does not reach', schema: SvixError },
    },
    handler: (d) => [
      async (c) => {
        const app = store(d).app(c.req.param('app')!);
        await checkOutstanding(d, app.id);
        const key = c.req.header('idempotency-key');
        const id = await d.apps!.messages.resend(app.id, c.req.param('msg')!, c.req.param('endpoint')!, key ? key.slice(0, 256) : undefined);
        d.log.debug('message resent', { app_id: app.id, msg_id: c.req.param('msg'), webhook_id: id });
        return c.json({}, 202);
      },
    ],
  },
  {
    ...ofApp,
    method: 'get',
    path: '/api/v1/app/:app/attempt/msg/:msg',
    summary: 'The delivery attempts of a message, one per HTTP attempt to each endpoint it reached',
    access: 'read',
    request: { params: MsgParams, query: ContentListQuery },
    responses: {
      '200': { description: 'one page', schema: listOf(AttemptOutSchema) },
      '422': { description: 'a bad query parameter (limit, iterator, order, with_content)', schema: SvixError },
      ...errors,
    },
    handler: (d) => [
      async (c) => {
        const p = page(c, await attemptsOf(d, message(d, c), undefined, withContent(c)), (a) => a.id);
        return c.json(p);
      },
    ],
  },
  {
    ...ofApp,
    method: 'get',
    path: '/api/v1/app/:app/attempt/endpoint/:endpoint',
    summary: "The delivery attempts to an endpoint, over the application's kept messages (newest message first)",
    access: 'read',
    request: { params: AppParam.extend({ endpoint: z.string() }), query: ContentListQuery },
    responses: {
      '200': { description: 'one page', schema: listOf(AttemptOutSchema) },
      '422': { description: 'a bad query parameter (limit, iterator, order, with_content)', schema: SvixError },
      ...errors,
    },
    handler: (d) => [
      async (c) => {
        const e = store(d).endpoint(c.req.param('app')!, c.req.param('endpoint')!);
        const content = withContent(c);
        const messages = store(d)
          .table.messagesOf(e.app_id)
          .filter((m) => m.deliveries.some((x) => x.endpoint_id === e.id));
        const all = (
          await Promise.all(
            messages
              .reverse()
              .slice(0, MAX_SCANNED)
              .map((m) => attemptsOf(d, m, e.id, content)),
          )
        ).flat();
        return c.json(page(c, all, (a) => a.id));
      },
    ],
  },
];
