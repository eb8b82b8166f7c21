import { z } from 'zod';
import { CONFIG_ID } from '../../core/domain/config-id';
import { PROVIDERS } from '../../core/signing/inbound/types';
import { TRANSFORMER_NAME } from '../../core/transformers/registry';

// Transformers as the edge bundles them at build time (scripts/edge-transformers.ts)
// from `name.lua` + optional `name.json` (+ `name.passwd`). Secrets are never bundled: the
// config names Worker secrets, read from env per request.

const SECRET_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const TransformerConfigSchema = z
  .object({
    /** Config id of the webhooks it makes (default: incoming:<name>, as howk-api). */
    config_id: z.string().regex(CONFIG_ID).optional(),
    /** Hosts howk.post accepts ("example.com", "*.example.com"); absent = any. */
    allowed_domains: z.array(z.string().min(1)).optional(),
    max_webhooks: z.number().int().min(1).max(1000).optional(),
    /** Hosts the Lua http module may call. */
    http_allow: z.array(z.string().min(1)).optional(),
    /** Inbound signature check, before anything reads the body. `secrets` are Worker secret names. */
    verify: z
      .object({
        provider: z.enum(PROVIDERS as [string, ...string[]]),
        secrets: z.array(z.string().regex(SECRET_NAME, 'secrets are names of Worker secrets')).min(1),
        tolerance: z.number().int().min(1).optional(),
      })
      .optional(),
    /** Worker secret holding "user:password" for Basic auth (required when the script has a .passwd file). */
    basic_auth_secret: z.string().regex(SECRET_NAME).optional(),
  })
  .loose();
export type TransformerConfig = z.infer<typeof TransformerConfigSchema>;

export type Transformer = { name: string; code: string; config: TransformerConfig; hasPasswd: boolean };

/** Validates a bundle (also used by the bundler, so that a bad config fails the build). */
export const parseBundle = (b: { transformers: { name: string; code: string; config: unknown; has_passwd: boolean }[] }): Map<string, Transformer> =>
  new Map(
    b.transformers.map((t) => {
      if (!TRANSFORMER_NAME.test(t.name)) throw new Error(`transformer name ${JSON.stringify(t.name)} is not 1-64 characters of A-Z a-z 0-9 _ -`);
      const parsed = TransformerConfigSchema.safeParse(t.config ?? {});
      if (!parsed.success) throw new Error(`transformer ${t.name}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
      return [t.name, { name: t.name, code: t.code, config: parsed.data, hasPasswd: t.has_passwd }];
    }),
  );
