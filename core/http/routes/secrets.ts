import { Hono } from 'hono';
import { z } from 'zod';
import { NotConfiguredError } from '../../errors/errors';
import type { ApiDeps } from '../deps';
import { checkConfigId } from '../../domain/config-id';
import { readJsonBody } from '../json-body';
import { signingSecretProblem } from '../../signing/secret-format';

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

/**
 * Per-config signing secrets. Answers carry ids and dates, never a secret, except the one
 * a rotation generated (the caller must hand it to the receiver; it is not shown again).
 */
export const secretRoutes = (d: ApiDeps) => {
  const app = new Hono();
  const svc = () => {
    if (!d.configSecrets) throw new NotConfiguredError('this server has no config secret store');
    return d.configSecrets;
  };
  app.get('/configs/:config/secret', (c) => {
    checkConfigId(c.req.param('config'));
    return c.json(svc().describe(c.req.param('config')));
  });
  app.put('/configs/:config/secret', async (c) => {
    const id = c.req.param('config');
    checkConfigId(id);
    const body = await readJsonBody(c, PutSecretBody);
    const view = await svc().set(id, body.secret);
    d.log.info('config signing secret set', { config_id: id, secret_id: view.secrets[0]?.id });
    return c.json(view);
  });
  app.post('/configs/:config/secret/rotate', async (c) => {
    const id = c.req.param('config');
    checkConfigId(id);
    const body = await readJsonBody(c, RotateSecretBody, { optional: true });
    const view = await svc().rotate(id, body.secret);
    d.log.info('config signing secret rotated', { config_id: id, secret_id: view.secrets[0]?.id, valid: view.secrets.length });
    return c.json(view);
  });
  app.delete('/configs/:config/secret', async (c) => {
    const id = c.req.param('config');
    checkConfigId(id);
    const view = await svc().remove(id);
    d.log.info('config signing secret removed', { config_id: id });
    return c.json(view);
  });
  return app;
};
