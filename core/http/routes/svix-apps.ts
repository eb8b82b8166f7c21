import { z } from 'zod';
import { appIn } from '../../apps/schemas';
import { reaches } from '../../security/api-keys';
import type { Route } from '../route';
import { AppOutSchema, AppParam, appConfig, appOut, ListQuery, listOf, page, readSvixBody, SMALL_BODY, store, SvixError } from './svix-common';

// Applications of the Svix API (docs/SVIX-API.md). An application is a Howk config: its id is
// the config id of its webhooks, and a key bound to configs reaches the applications it names.

const base = { tag: 'svix', needs: ['apps'] } as const;
const errors = { '401': { description: 'no or bad API key', schema: SvixError }, '422': { description: 'invalid body; detail names each field', schema: SvixError } };
const ofApp = { ...base, config: appConfig, request: { params: AppParam } } as const;
const notFound = { '404': { description: 'no such application (or one the key does not reach)', schema: SvixError } };

export const svixAppRoutes: Route[] = [
  {
    ...base,
    method: 'get',
    path: '/api/v1/app',
    summary: 'List applications (a key bound to configs sees its own)',
    access: 'read',
    config: { from: 'self' },
    request: { query: ListQuery },
    responses: { '200': { description: 'one page', schema: listOf(AppOutSchema) }, ...errors },
    handler: (d) => [
      (c) => {
        const key = c.get('apiKey');
        const mine = store(d)
          .listApps()
          .filter((a) => !key || reaches(key, a.id));
        const p = page(c, mine, (a) => a.id);
        return c.json({ ...p, data: p.data.map(appOut) });
      },
    ],
  },
  {
    ...base,
    method: 'post',
    path: '/api/v1/app',
    summary: 'Create an application (a Howk config of its own); with get_if_exists=true, the one of that uid if there is one; an unbound key only',
    access: 'admin',
    request: { query: () => z.object({ get_if_exists: z.enum(['true', 'false']).optional() }), body: appIn, bodyRequired: true },
    responses: {
      '201': { description: 'created', schema: AppOutSchema },
      '200': { description: 'get_if_exists=true: the application of that uid, unchanged', schema: AppOutSchema },
      '409': { description: 'uid taken, or svix.max_applications reached', schema: SvixError },
      ...errors,
    },
    handler: (d) => [
      async (c) => {
        const { value } = await readSvixBody(c, appIn(d.config), SMALL_BODY);
        if (c.req.query('get_if_exists') === 'true') {
          const { app, created } = await store(d).getOrCreateApp(value);
          return c.json(appOut(app), created ? 201 : 200);
        }
        const a = await store(d).createApp(value);
        d.log.info('application created', { app_id: a.id, by: c.get('apiKey')?.id ?? null });
        return c.json(appOut(a), 201);
      },
    ],
  },
  {
    ...ofApp,
    method: 'get',
    path: '/api/v1/app/:app',
    summary: 'Get an application by id or uid',
    access: 'read',
    responses: { '200': { description: 'the application', schema: AppOutSchema }, ...notFound, ...errors },
    handler: (d) => [(c) => c.json(appOut(store(d).app(c.req.param('app')!)))],
  },
  {
    ...ofApp,
    method: 'put',
    path: '/api/v1/app/:app',
    summary: 'Update an application',
    access: 'admin',
    request: { ...ofApp.request, body: appIn, bodyRequired: true },
    responses: { '200': { description: 'updated', schema: AppOutSchema }, '409': { description: 'uid taken', schema: SvixError }, ...notFound, ...errors },
    handler: (d) => [
      async (c) => {
        const { value } = await readSvixBody(c, appIn(d.config), SMALL_BODY);
        return c.json(appOut(await store(d).updateApp(c.req.param('app')!, value)));
      },
    ],
  },
  {
    ...ofApp,
    method: 'delete',
    path: '/api/v1/app/:app',
    summary: 'Delete an application and its endpoints (webhooks already queued are still delivered)',
    access: 'admin',
    responses: { '204': { description: 'deleted' }, ...notFound, ...errors },
    handler: (d) => [
      async (c) => {
        const id = store(d).app(c.req.param('app')!).id;
        await store(d).deleteApp(id);
        d.log.info('application deleted', { app_id: id, by: c.get('apiKey')?.id ?? null });
        return c.body(null, 204);
      },
    ],
  },
];
