import { z } from 'zod';
import { CONFIG_ID } from '../domain/config-id';
import { checkTemplates } from '../domain/templates';
import { PROVIDERS, type Provider } from '../signing/inbound/types';

// name.json of a transformer: ONE schema for every runtime (howk-api and howk-dev read it
// from transformer.script_dirs, the edge's bundler from the same directories). Unknown keys
// are refused: a misspelt `_delivery_headers` must not let a webhook go out without its
// auth header. docs/LUA.md, "name.json".

/**
 * Secret names: variables of the runtime's secret environment (howk-api's process env, the
 * edge's Worker secrets), never a value. HOWK_* names are the fleet's own settings and keys.
 */
export const SECRET_NAME = /^(?!HOWK_)[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const secretName = z.string().regex(SECRET_NAME, 'must be the name of a secret (A-Z a-z 0-9 _, not HOWK_*), not its value');

/** Keys of earlier releases, refused with the key that replaced them. */
const RENAMED: Record<string, string> = { http_allow: 'allowed_hosts' };

const templates = (kind: 'header' | 'query') =>
  z.unknown().transform((v, ctx) => {
    try {
      return checkTemplates(v, kind);
    } catch (e) {
      ctx.addIssue({ code: 'custom', message: (e as Error).message });
      return z.NEVER;
    }
  });

export const TransformerSettingsSchema = z
  .object({
    /** Hosts howk.post may target ("example.com", "*.example.com"); absent = any host. */
    allowed_domains: z.array(z.string().min(1)).optional(),
    /** The config_id the webhooks are enqueued under (default `incoming:<name>`). */
    config_id: z.string().regex(CONFIG_ID, 'must be 1-128 characters of A-Z a-z 0-9 . _ : -').optional(),
    /** Hosts the script's `http` module may call, on top of lua.http_allowlist["incoming:<name>"]. */
    allowed_hosts: z.array(z.string().min(1)).optional(),
    /** At most this many howk.post per run (default and ceiling: api.max_batch_size). */
    max_webhooks: z.number().int().min(1).max(1000).optional(),
    /** `${VAR}` header templates added to every webhook the script posts, resolved by the worker at send time. */
    _delivery_headers: templates('header').optional(),
    /** `${VAR}` query-parameter templates, likewise. */
    _delivery_query_params: templates('query').optional(),
    /** Inbound signature check on the raw body, before the script runs. `secrets`: names, the current first during a rotation. */
    verify: z
      .object({
        provider: z.enum(PROVIDERS as [Provider, ...Provider[]]),
        secrets: z.array(secretName).min(1).max(5),
        /** Largest age of a signed timestamp, seconds (schemes with one: stripe, standard, svix). */
        tolerance: z.number().int().min(1).max(86_400).optional(),
      })
      .strict()
      .optional(),
    /** A secret holding passwd lines (`user:password` or `user:$2b$…`), added to name.passwd's users. */
    basic_auth_secret: secretName.optional(),
  })
  .strict();

export type TransformerSettingsInput = z.input<typeof TransformerSettingsSchema>;

/** name.json, as the route uses it. */
export type TransformerSettings = {
  allowed_domains?: string[];
  config_id?: string;
  allowed_hosts?: string[];
  max_webhooks?: number;
  delivery_headers?: Record<string, string>;
  delivery_query_params?: Record<string, string>;
  verify?: { provider: Provider; secrets: string[]; tolerance?: number };
  basic_auth_secret?: string;
};

/** Parses name.json (its JSON value); throws an Error whose message names each bad key. */
export const parseSettings = (json: unknown): TransformerSettings => {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new Error('must be a JSON object');
  const renamed = Object.keys(json).filter((k) => Object.hasOwn(RENAMED, k));
  if (renamed.length) throw new Error(renamed.map((k) => `${k} was renamed ${RENAMED[k]} (same meaning): rename the key`).join('; '));
  const r = TransformerSettingsSchema.safeParse(json);
  if (!r.success)
    throw new Error(
      r.error.issues
        .map((i) => (i.code === 'unrecognized_keys' ? `unknown key${i.keys.length > 1 ? 's' : ''} ${i.keys.join(', ')}` : `${i.path.join('.')}: ${i.message}`))
        .join('; '),
    );
  const { _delivery_headers, _delivery_query_params, ...rest } = r.data;
  return {
    ...rest,
    ...(_delivery_headers ? { delivery_headers: _delivery_headers } : {}),
    ...(_delivery_query_params ? { delivery_query_params: _delivery_query_params } : {}),
  };
};

/** The secret names a transformer refers to (Basic auth, signature). */
export const secretNamesOf = (s: TransformerSettings): string[] => [...(s.basic_auth_secret ? [s.basic_auth_secret] : []), ...(s.verify?.secrets ?? [])];
