import type { Context } from 'hono';
import { z } from 'zod';
import { checkConfigId } from '../../domain/config-id';
import { readJsonBody } from '../json-body';
import { ConfigParam } from '../params';
import type { Route } from '../route';
import { signingSecretProblem } from '../../domain/secret-format';

/** `whsec_<base64 of at least 16 bytes>`, or 16-512 printable ASCII characters used as they are. */
export const SigningSecretSchema = z
  .string()
  .min(16)
  .max(512)
  .regex(/^[!-~]+$/, 'a secret is printable ASCII without spaces')
  .superRefine((s, ctx) => {
    const message = signingSecretProblem(s);
    if (message) ctx.addIssue({ code: 'custom', message });
  })
  .describe('whsec_<base64> (Standard Webhooks) or 16-512 printable ASCII characters');

export const PutSecretBody = z.object({ secret: SigningSecretSchema }).strict();
export const RotateSecretBody = z.object({ secret: SigningSecretSchema.optional().describe('The new secret; generated when absent') }).strict();

export const SecretMetaSchema = z.object({ id: z.string(), created_at: z.string(), expires_at: z.string().nullable() });
export const SecretViewSchema = z.object({ config_id: z.string(), secrets: z.array(SecretMetaSchema) });
export const RotatedSecretSchema = SecretViewSchema.extend({ secret: z.string().optional().describe('The generated secret, shown once (absent when the request gave one)') });

const secret = { tag: 'secrets', access: 'admin', needs: ['configSecrets'], config: { from: 'param', name: 'config' }, request: { params: ConfigParam } } as const;

const configOf = (c: Context): string => {
  const id = c.req.param('config')!;
  checkConfigId(id);
  return id;
};

/**
 * Per-config signing secrets. Answers carry ids and dates, never a secret, except the one
 * a rotation generated (the caller must hand it to the receiver; it is not shown again).
 */
export const secretRoutes: Route[] = [
  {
    ...secret,
    method: 'get',
    path: '/configs/:config/secret',
    summary: "Ids and validity of the config's signing secrets (never values)",
    responses: { '200': { description: 'secrets', schema: SecretViewSchema } },
    handler: (d) => [(c) => c.json(d.configSecrets!.describe(configOf(c)))],
  },
  {
    ...secret,
    method: 'put',
    path: '/configs/:config/secret',
    summary: "Set the config's signing secret, replacing all others at once",
    request: { ...secret.request, body: () => PutSecretBody, bodyRequired: true },
    responses: { '200': { description: 'set', schema: SecretViewSchema } },
    handler: (d) => [
      async (c) => {
        const id = configOf(c);
        const body = await readJsonBody(c, PutSecretBody);
        const view = await d.configSecrets!.set(id, body.secret);
        d.log.info('config signing secret set', { config_id: id, secret_id: view.secrets[0]?.id });
        return c.json(view);
      },
    ],
  },
  {
    ...secret,
    method: 'post',
    path: '/configs/:config/secret/rotate',
    summary: 'Add a new signing secret; the previous one stays valid for signing.rotation_overlap',
    request: { ...secret.request, body: () => RotateSecretBody },
    responses: { '200': { description: 'rotated', schema: RotatedSecretSchema } },
    handler: (d) => [
      async (c) => {
        const id = configOf(c);
        const body = await readJsonBody(c, RotateSecretBody, { optional: true });
        const view = await d.configSecrets!.rotate(id, body.secret);
        d.log.info('config signing secret rotated', { config_id: id, secret_id: view.secrets[0]?.id, valid: view.secrets.length });
        return c.json(view);
      },
    ],
  },
  {
    ...secret,
    method: 'delete',
    path: '/configs/:config/secret',
    summary: "Remove the config's secrets (deliveries fall back to signing.default_secret)",
    responses: { '200': { description: 'removed', schema: SecretViewSchema } },
    handler: (d) => [
      async (c) => {
        const id = configOf(c);
        const view = await d.configSecrets!.remove(id);
        d.log.info('config signing secret removed', { config_id: id });
        return c.json(view);
      },
    ],
  },
];
