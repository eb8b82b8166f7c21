import { z } from 'zod';
import { CONFIG_ID } from '../../domain/config-id';
import { ValidationError } from '../../errors/errors';
import type { Route } from '../route';
import { listBody } from './webhooks';

// GET /scripts: every config's delivery script (without its source: GET /config/:config/script
// has it), in config id order, a page at a time. The scripts are all in memory (read from
// howk.scripts), so a page is cheap.

const MAX_LIMIT = 500;

const Row = z.object({
  config_id: z.string(),
  sha256: z.string(),
  bytes: z.number().int(),
  lines: z.number().int(),
  apply_to_children: z.boolean(),
  updated_at: z.string(),
});

const Query = () =>
  z.object({
    cursor: z.string().regex(CONFIG_ID).optional().describe('next_cursor of the previous page'),
    limit: z.number().int().min(1).max(MAX_LIMIT).optional().describe('Page size (default 100)'),
  });

export const scriptListRoutes: Route[] = [
  {
    method: 'get',
    path: '/scripts',
    tag: 'scripts',
    summary: 'Delivery scripts of every config, in config id order (one page; source left out). A key bound to configs reads its own with GET /config/:config/script',
    access: 'read',
    needs: ['scripts'],
    request: { query: Query },
    responses: { '200': { description: 'page', schema: z.object({ items: z.array(Row), count: z.number().int(), next_cursor: z.string().nullable() }) } },
    handler: (d) => [
      (c) => {
        const cursor = c.req.query('cursor') || undefined;
        if (cursor !== undefined && !CONFIG_ID.test(cursor)) throw new ValidationError('cursor is not one this listing returned', 'cursor');
        const raw = c.req.query('limit');
        const limit = raw ? Number(raw) : 100;
        if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new ValidationError(`limit must be an integer from 1 to ${MAX_LIMIT}`, 'limit');
        const rows = d.scripts!.list(cursor, limit + 1);
        const items = rows.slice(0, limit).map((r) => ({
          config_id: r.config_id,
          sha256: r.sha256,
          bytes: new TextEncoder().encode(r.code).length,
          lines: r.code.split('\n').length,
          apply_to_children: r.apply_to_children ?? false,
          updated_at: r.updated_at,
        }));
        return c.json(listBody(items, rows.length > limit ? items[items.length - 1]!.config_id : null));
      },
    ],
  },
];
