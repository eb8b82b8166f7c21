import { z } from 'zod';
import { configIdFor } from '../../transformers/registry';
import type { Route } from '../route';

// GET /transformers: the /incoming scripts this process loaded (read only: they come from
// files, docs/LUA.md), with their settings and source. Of a passwd file only its kind and
// user count are shown, never an entry.

const Row = z.object({
  name: z.string(),
  config_id: z.string().describe('The config its webhooks are enqueued under'),
  settings: z.looseObject({}).describe('name.json as loaded'),
  auth: z.object({ kind: z.enum(['none', 'passwd', 'refuse']), users: z.number().int().nullable() }),
  code: z.string(),
});

export const transformerListRoutes: Route[] = [
  {
    method: 'get',
    path: '/transformers',
    tag: 'incoming',
    summary: 'The transformers (/incoming scripts) this process loaded, by name: settings, Basic auth kind (never its entries) and source',
    access: 'read',
    needs: ['transformers'],
    responses: { '200': { description: 'transformers', schema: z.object({ items: z.array(Row), count: z.number().int() }) } },
    handler: (d) => [
      (c) => {
        const t = d.transformers!;
        const items = (t.names?.() ?? [])
          .sort()
          .map((n) => t.get(n))
          .filter((s) => s !== undefined)
          .map((s) => ({
            name: s.name,
            config_id: configIdFor(s),
            settings: s.settings,
            auth: { kind: s.auth.kind, users: s.auth.kind === 'passwd' ? s.auth.users.size : null },
            code: s.code,
          }));
        return c.json({ items, count: items.length });
      },
    ],
  },
];
