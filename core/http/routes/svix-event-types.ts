import { z } from 'zod';
import { eventTypeIn, eventTypeUpdate } from '../../apps/schemas';
import type { Route } from '../route';
import { ContentListQuery, EventTypeOutSchema, eventTypeOut, listOf, page, readSvixBody, SMALL_BODY, store, SvixError, withContent } from './svix-common';

// Event types of the Svix API: one list for the whole server (Svix keeps one per
// organization). Any key may read them; only a key that reaches every config writes them.

const base = { tag: 'svix', needs: ['apps'] } as const;
const errors = { '401': { description: 'no or bad API key', schema: SvixError }, '422': { description: 'invalid body; detail names each field', schema: SvixError } };
const NameParam = z.object({ name: z.string() });

export const svixEventTypeRoutes: Route[] = [
  {
    ...base,
    method: 'get',
    path: '/api/v1/event-type',
    summary: 'List event types (archived ones with include_archived=true)',
    access: 'read',
    config: { from: 'self' },
    request: { query: () => ContentListQuery().extend({ include_archived: z.enum(['true', 'false']).optional() }) },
    responses: { '200': { description: 'one page', schema: listOf(EventTypeOutSchema) }, ...errors },
    handler: (d) => [
      (c) => {
        const all = c.req.query('include_archived') === 'true';
        const p = page(
          c,
          store(d)
            .listEventTypes()
            .filter((t) => all || !t.archived),
          (t) => t.name,
        );
        const content = withContent(c);
        return c.json({ ...p, data: p.data.map((t) => (content ? eventTypeOut(t) : { ...eventTypeOut(t), schemas: null })) });
      },
    ],
  },
  {
    ...base,
    method: 'post',
    path: '/api/v1/event-type',
    summary: 'Create an event type (a key that reaches every config)',
    access: 'admin',
    request: { body: eventTypeIn, bodyRequired: true },
    responses: {
      '201': { description: 'created', schema: EventTypeOutSchema },
      '409': { description: 'the name exists, or svix.max_event_types reached', schema: SvixError },
      ...errors,
    },
    handler: (d) => [
      async (c) => {
        const { value } = await readSvixBody(c, eventTypeIn(d.config), SMALL_BODY);
        return c.json(eventTypeOut(await store(d).createEventType(value)), 201);
      },
    ],
  },
  {
    ...base,
    method: 'get',
    path: '/api/v1/event-type/:name',
    summary: 'Get an event type',
    access: 'read',
    config: { from: 'self' },
    request: { params: NameParam },
    responses: { '200': { description: 'the event type', schema: EventTypeOutSchema }, '404': { description: 'no such event type', schema: SvixError }, ...errors },
    handler: (d) => [(c) => c.json(eventTypeOut(store(d).eventType(c.req.param('name')!)))],
  },
  {
    ...base,
    method: 'put',
    path: '/api/v1/event-type/:name',
    summary: 'Update an event type (archived: true archives it)',
    access: 'admin',
    request: { params: NameParam, body: eventTypeUpdate, bodyRequired: true },
    responses: { '200': { description: 'updated', schema: EventTypeOutSchema }, '404': { description: 'no such event type', schema: SvixError }, ...errors },
    handler: (d) => [
      async (c) => {
        const { value } = await readSvixBody(c, eventTypeUpdate(d.config), SMALL_BODY);
        return c.json(eventTypeOut(await store(d).updateEventType(c.req.param('name')!, value)));
      },
    ],
  },
];
