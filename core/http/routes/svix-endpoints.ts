import { endpointIn, endpointUpdate, headersIn, rotateIn } from '../../apps/schemas';
import { z } from 'zod';
import type { Route } from '../route';
import { appConfig, AppParam, EndpointOutSchema, EndpointParams, endpointOut, ListQuery, listOf, page, readSvixBody, SMALL_BODY, store, SvixError } from './svix-common';

// Endpoints of an application (docs/SVIX-API.md): where its messages go, which event types
// and channels they listen to, their custom headers and their signing secret.

const errors = {
  '401': { description: 'no or bad API key', schema: SvixError },
  '404': { description: 'no such application or endpoint (or one the key does not reach)', schema: SvixError },
  '422': { description: 'invalid body; detail names each field', schema: SvixError },
};
const ofApp = { tag: 'svix', needs: ['apps'], config: appConfig, request: { params: AppParam } } as const;
const ofEndpoint = { ...ofApp, request: { params: EndpointParams } } as const;
const ids = (c: { req: { param(n: string): string | undefined } }) => [c.req.param('app')!, c.req.param('endpoint')!] as const;

const HeadersOut = z.object({ headers: z.record(z.string(), z.string()), sensitive: z.array(z.string()) });

export const svixEndpointRoutes: Route[] = [
  {
    ...ofApp,
    method: 'get',
    path: '/api/v1/app/:app/endpoint',
    summary: "List an application's endpoints",
    access: 'read',
    request: { ...ofApp.request, query: ListQuery },
    responses: { '200': { description: 'one page', schema: listOf(EndpointOutSchema) }, ...errors },
    handler: (d) => [
      (c) => {
        const p = page(c, store(d).listEndpoints(c.req.param('app')!), (e) => e.id);
        return c.json({ ...p, data: p.data.map(endpointOut) });
      },
    ],
  },
  {
    ...ofApp,
    method: 'post',
    path: '/api/v1/app/:app/endpoint',
    summary: 'Create an endpoint; its secret is generated unless given',
    access: 'admin',
    request: { ...ofApp.request, body: endpointIn, bodyRequired: true },
    responses: {
      '201': { description: 'created', schema: EndpointOutSchema },
      '409': { description: 'uid taken in this application, or svix.max_endpoints_per_app reached', schema: SvixError },
      '501': { description: 'the server has no HOWK_SECRETS_KEY to seal secrets with' },
      ...errors,
    },
    handler: (d) => [
      async (c) => {
        const { value } = await readSvixBody(c, endpointIn(d.config), SMALL_BODY);
        const e = await store(d).createEndpoint(c.req.param('app')!, value);
        d.log.info('endpoint created', { app_id: e.app_id, endpoint_id: e.id, by: c.get('apiKey')?.id ?? null });
        return c.json(endpointOut(e), 201);
      },
    ],
  },
  {
    ...ofEndpoint,
    method: 'get',
    path: '/api/v1/app/:app/endpoint/:endpoint',
    summary: 'Get an endpoint by id or uid',
    access: 'read',
    responses: { '200': { description: 'the endpoint', schema: EndpointOutSchema }, ...errors },
    handler: (d) => [(c) => c.json(endpointOut(store(d).endpoint(...ids(c))))],
  },
  {
    ...ofEndpoint,
    method: 'put',
    path: '/api/v1/app/:app/endpoint/:endpoint',
    summary: 'Update an endpoint (its secret and headers have routes of their own)',
    access: 'admin',
    request: { ...ofEndpoint.request, body: endpointUpdate, bodyRequired: true },
    responses: { '200': { description: 'updated', schema: EndpointOutSchema }, '409': { description: 'uid taken in this application', schema: SvixError }, ...errors },
    handler: (d) => [
      async (c) => {
        const { value } = await readSvixBody(c, endpointUpdate(d.config), SMALL_BODY);
        return c.json(endpointOut(await store(d).updateEndpoint(...ids(c), value)));
      },
    ],
  },
  {
    ...ofEndpoint,
    method: 'delete',
    path: '/api/v1/app/:app/endpoint/:endpoint',
    summary: 'Delete an endpoint (webhooks already queued for it are still delivered)',
    access: 'admin',
    responses: { '204': { description: 'deleted' }, ...errors },
    handler: (d) => [
      async (c) => {
        await store(d).deleteEndpoint(...ids(c));
        return c.body(null, 204);
      },
    ],
  },
  {
    ...ofEndpoint,
    method: 'get',
    path: '/api/v1/app/:app/endpoint/:endpoint/secret',
    summary: "The endpoint's current signing secret (whsec_...): admin scope",
    access: 'admin',
    responses: { '200': { description: 'the secret', schema: z.object({ key: z.string() }) }, ...errors },
    handler: (d) => [
      async (c) => {
        const [app, endpoint] = ids(c);
        const key = await store(d).currentSecret(app, endpoint);
        // Who read a signing secret, never the secret.
        d.log.info('endpoint secret read', { app, endpoint, by: c.get('apiKey')?.id ?? null });
        return c.json({ key });
      },
    ],
  },
  {
    ...ofEndpoint,
    method: 'post',
    path: '/api/v1/app/:app/endpoint/:endpoint/secret/rotate',
    summary: 'A new signing secret (generated unless given); the previous one keeps signing for signing.rotation_overlap',
    access: 'admin',
    request: { ...ofEndpoint.request, body: () => rotateIn },
    responses: { '204': { description: 'rotated' }, ...errors },
    handler: (d) => [
      async (c) => {
        const { value } = await readSvixBody(c, rotateIn, SMALL_BODY, true);
        const [app, endpoint] = ids(c);
        await store(d).rotateSecret(app, endpoint, value.key);
        d.log.info('endpoint secret rotated', { app, endpoint, by: c.get('apiKey')?.id ?? null });
        return c.body(null, 204);
      },
    ],
  },
  {
    ...ofEndpoint,
    method: 'get',
    path: '/api/v1/app/:app/endpoint/:endpoint/headers',
    summary: 'The custom headers sent with each webhook of the endpoint',
    access: 'read',
    responses: { '200': { description: 'headers', schema: HeadersOut }, ...errors },
    handler: (d) => [(c) => c.json({ headers: store(d).endpoint(...ids(c)).headers, sensitive: [] })],
  },
  {
    ...ofEndpoint,
    method: 'put',
    path: '/api/v1/app/:app/endpoint/:endpoint/headers',
    summary: 'Replace the custom headers of the endpoint (checked as an enqueue checks them)',
    access: 'admin',
    request: { ...ofEndpoint.request, body: headersIn, bodyRequired: true },
    responses: { '204': { description: 'set' }, ...errors },
    handler: (d) => [
      async (c) => {
        const { value } = await readSvixBody(c, headersIn(d.config), SMALL_BODY);
        await store(d).setHeaders(...ids(c), value.headers);
        return c.body(null, 204);
      },
    ],
  },
];
