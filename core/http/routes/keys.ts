import type { Context } from 'hono';
import { z } from 'zod';
import { ConflictError, NotFoundError } from '../../errors/errors';
import { EMPTY_CONFIG_IDS, keyView, SCOPES } from '../../security/api-keys';
import type { AuthVariables } from '../middleware/auth';
import { CONFIG_ID } from '../../domain/config-id';
import { readJsonBody } from '../json-body';
import { IdParam } from '../params';
import type { Route } from '../route';

export const CreateKeyBody = z
  .object({
    name: z.string().max(128).optional().describe('A label for people; not secret'),
    scopes: z.array(z.enum(SCOPES)).min(1).max(3).describe('enqueue, read, admin (admin covers all)'),
    config_ids: z
      .array(z.string().regex(CONFIG_ID))
      .min(1, EMPTY_CONFIG_IDS)
      .max(1000)
      .optional()
      .describe('When set (at least one), the key reaches only these configs; left out, every config'),
  })
  .strict();

export const KeyViewSchema = z.object({
  id: z.string(),
  name: z.string(),
  scopes: z.array(z.enum(SCOPES)),
  config_ids: z.array(z.string()).nullable(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
});

export const CreatedKeySchema = KeyViewSchema.extend({ key: z.string().describe('The API key; shown once, stored only as a SHA-256 hash') });

export const KEY_ID = /^[0-9a-f]{16}$/;

export const AUTH_DISABLED =
  'API keys are off on this server (api.auth.enabled=false), so no key is made: anyone can call this route now. Turn keys on (HOWK_API_AUTH_ENABLED=true) and make keys with an admin key or `npm run keys -- create`';

/** Key management; the auth middleware already required an admin key bound to no config. */
export const keyRoutes: Route[] = [
  {
    method: 'post',
    path: '/keys',
    tag: 'keys',
    summary: 'Create an API key (the key is shown once)',
    access: 'admin',
    needs: ['keyAdmin'],
    request: { body: () => CreateKeyBody, bodyRequired: true },
    responses: {
      '201': { description: 'created', schema: CreatedKeySchema },
      '409': { description: 'API keys are off on this server (code auth_disabled): no key is made', schema: { $ref: '#/components/schemas/Error' } },
    },
    handler: (d) => [
      async (c: Context<{ Variables: AuthVariables }>) => {
        // Anyone may call this route while keys are off; a key made then would be a stranger's
        // admin key the moment keys are turned on.
        if (!d.config.api.auth.enabled) throw new ConflictError('auth_disabled', AUTH_DISABLED);
        const body = await readJsonBody(c, CreateKeyBody);
        const created = await d.keyAdmin!.create({ name: body.name, scopes: body.scopes, config_ids: body.config_ids ?? null });
        d.log.info('api key created', { key_id: created.id, scopes: created.scopes, by: c.get('apiKey')?.id ?? null });
        return c.json(created, 201);
      },
    ],
  },
  {
    method: 'get',
    path: '/keys',
    tag: 'keys',
    summary: 'List API keys (never their secret or hash)',
    access: 'admin',
    needs: ['keyAdmin'],
    responses: { '200': { description: 'keys', schema: z.object({ keys: z.array(KeyViewSchema) }) } },
    handler: (d) => [(c) => c.json({ keys: d.keyAdmin!.list() })],
  },
  {
    method: 'delete',
    path: '/keys/:id',
    tag: 'keys',
    summary: 'Revoke an API key: it stops working at once',
    access: 'admin',
    needs: ['keyAdmin'],
    request: { params: IdParam },
    responses: { '200': { description: 'revoked', schema: KeyViewSchema } },
    handler: (d) => [
      async (c) => {
        const id = c.req.param('id')!;
        if (!KEY_ID.test(id)) throw new NotFoundError('API key');
        const revoked = await d.keyAdmin!.revoke(id);
        d.log.info('api key revoked', { key_id: revoked.id });
        return c.json(revoked);
      },
    ],
  },
  {
    method: 'get',
    path: '/keys/me',
    tag: 'keys',
    summary: 'The key of the request (scopes, configs; never its secret): null when auth is off. Any read key, bound to configs or not, may ask',
    access: 'read',
    config: { from: 'self' },
    needs: ['keyAdmin'],
    responses: { '200': { description: 'the key', schema: z.object({ auth: z.boolean(), key: KeyViewSchema.nullable() }) } },
    handler: () => [
      (c: Context<{ Variables: AuthVariables }>) => {
        const k = c.get('apiKey');
        return c.json({ auth: k !== undefined, key: k ? keyView(k) : null });
      },
    ],
  },
];
