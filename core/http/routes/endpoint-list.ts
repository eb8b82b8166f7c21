import type { Context } from 'hono';
import { z } from 'zod';
import { CONFIG_ID } from '../../domain/config-id';
import { ValidationError } from '../../errors/errors';
import { guardParams } from '../../pipeline/guard-params';
import { redactEndpoint } from '../../pipeline/redact';
import type { AuthVariables } from '../middleware/auth';
import type { Route } from '../route';
import { EndpointViewSchema } from './endpoints';

// GET /endpoints?config_id=…: the endpoints a config delivers to, found among its most recent
// webhooks in the hot state (the same index as GET /webhooks, newest first, at most SCAN of
// them), each with the live view of GET /endpoints/:hash. Bounded: no scan of every key.
// An endpoint URL two configs share has one view (circuit, latency, in-flight: the one gate
// both configs' deliveries pass). Its last errors are what a response said to another tenant,
// so a key bound to configs sees its own config's instead: the last errors of its webhooks.

export const ENDPOINTS_SCAN = 1000;
const MAX_LIMIT = 100;

const Query = () =>
  z.object({
    config_id: z.string().regex(CONFIG_ID),
    limit: z.number().int().min(1).max(MAX_LIMIT).optional().describe('Endpoints at most (default 50), the most recently used first'),
  });

const Row = EndpointViewSchema.extend({
  endpoint: z.string().describe('The URL as GET /webhooks shows it (userinfo and query values redacted)'),
  webhooks: z.number().int().describe('Webhooks to it among those scanned'),
  last_created_at: z.string().describe('When the newest of them was created'),
  last_errors: EndpointViewSchema.shape.last_errors.describe(
    "The endpoint's last errors, whichever config's webhook met them; for a key bound to configs, those of this config's scanned webhooks only",
  ),
});

const LAST_ERRORS = 10;

type Seen = { endpoint: string; webhooks: number; last_created_at: string; errors: { at: string; error: string }[] };

/** The config's own last errors of an endpoint, newest attempt first (those of its scanned webhooks). */
const ownErrors = (e: Seen) => e.errors.sort((a, b) => b.at.localeCompare(a.at)).slice(0, LAST_ERRORS);

const limitOf = (v: string | undefined): number => {
  if (v === undefined || v === '') return 50;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_LIMIT) throw new ValidationError(`limit must be an integer from 1 to ${MAX_LIMIT}`, 'limit');
  return n;
};

export const endpointListRoutes: Route[] = [
  {
    method: 'get',
    path: '/endpoints',
    tag: 'endpoints',
    summary: `Endpoints of a config (found among its ${ENDPOINTS_SCAN} most recent webhooks), each with its circuit, adaptive limit, latency, in-flight and queued deliveries, slowness, pause and last errors`,
    access: 'read',
    config: { from: 'query', name: 'config_id' },
    needs: ['listing', 'guards'],
    request: { query: Query },
    responses: {
      '200': {
        description: 'endpoints',
        schema: z.object({
          items: z.array(Row),
          count: z.number().int(),
          scanned: z.number().int().describe('Webhooks looked at'),
          complete: z.boolean().describe('Every webhook of the config in the hot state was looked at'),
        }),
      },
    },
    handler: (d) => {
      const params = guardParams(d.config);
      return [
        async (c: Context<{ Variables: AuthVariables }>) => {
          const configId = c.req.query('config_id') ?? '';
          if (!CONFIG_ID.test(configId)) throw new ValidationError('config_id must be 1-128 characters of A-Z a-z 0-9 . _ : -', 'config_id');
          const limit = limitOf(c.req.query('limit'));
          const seen = new Map<string, Seen>();
          let cursor: string | undefined;
          let scanned = 0;
          let complete = false;
          while (scanned < ENDPOINTS_SCAN) {
            const page = await d.listing!.listWebhooks({ configId, limit: 500, ...(cursor ? { cursor } : {}) });
            for (const w of page.items) {
              scanned++;
              let e = seen.get(w.endpoint_hash);
              if (e) e.webhooks++;
              else seen.set(w.endpoint_hash, (e = { endpoint: redactEndpoint(w.endpoint), webhooks: 1, last_created_at: w.created_at, errors: [] }));
              if (w.last_error && w.last_attempt_at) e.errors.push({ at: w.last_attempt_at, error: w.last_error });
            }
            if (page.next === null) {
              complete = true;
              break;
            }
            cursor = page.next;
          }
          const now = d.clock.now();
          const picked = [...seen.entries()].slice(0, limit);
          const bound = (c.get('apiKey')?.config_ids ?? null) !== null;
          const items = await Promise.all(
            picked.map(async ([hash, { errors: _own, ...e }]) => {
              const view = await d.guards!.endpoint(hash, now, params);
              return { ...e, ...view, ...(bound ? { last_errors: ownErrors(seen.get(hash)!) } : {}) };
            }),
          );
          return c.json({ items, count: items.length, scanned, complete });
        },
      ];
    },
  },
];
