import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../core/config/schema';
import { createApiApp, type ApiDeps } from '../../core/http/app';
import { buildOpenApi } from '../../core/http/openapi';
import { openApiPath, routeKey } from '../../core/http/route';
import { ROUTES } from '../../core/http/route-table';
import { servesRoute } from '../../core/http/runtimes';
import { silentLogger } from '../../core/ports/logger';
import { startTestFleet, type TestFleet } from '../helpers/fleet';

// The route table is the one declaration of the HTTP API: what an app mounts and what its
// /openapi.json documents must be the same set, both ways.

const read = (p: string) => readFileSync(new URL(`../../${p}`, import.meta.url), 'utf8');
const config = ConfigSchema.parse({});
const stub = {} as never;
const base: ApiDeps = { config, enqueue: async () => [], hot: stub, log: silentLogger, dependencies: [], clock: { now: () => 0 } };
// Every capability (as howk-api's fleet provides them); handlers are only built, never called.
const full: ApiDeps = {
  ...base,
  listing: stub,
  redrive: stub,
  guards: stub,
  producer: stub,
  keyAdmin: stub,
  configSecrets: stub,
  scripts: stub,
  transformers: stub,
  metrics: stub,
  outstanding: stub,
  events: stub,
  changes: stub,
  overview: stub,
  apps: stub,
};

type App = ReturnType<typeof createApiApp>;
const mounted = (app: App) => new Set(app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${openApiPath(r.path)}`));
const documented = (doc: any) => new Set(Object.entries(doc.paths as Record<string, object>).flatMap(([p, ms]) => Object.keys(ms).map((m) => `${m.toUpperCase()} ${p}`)));
const servedDoc = async (app: App) => (await app.request('/openapi.json')).json();

const FIVE = ['GET /webhooks', 'POST /webhooks/{id}/retry', 'GET /deadletter', 'GET /deadletter/{id}', 'POST /deadletter/{id}/replay'];

describe('route table: mounted = documented', () => {
  it("howk-api's app (every capability) mounts exactly what its /openapi.json documents, which is every declared route", async () => {
    const app = createApiApp(full);
    const doc = await servedDoc(app);
    expect([...mounted(app)].sort()).toEqual([...documented(doc)].sort());
    expect([...documented(doc)].sort()).toEqual(ROUTES.map((r) => `${r.method.toUpperCase()} ${openApiPath(r.path)}`).sort());
    for (const r of FIVE) expect(documented(doc), r).toContain(r);
  });

  it('an app without a capability neither mounts nor documents the routes that need it', async () => {
    const app = createApiApp({ ...base, config: ConfigSchema.parse({ api: { auth: { enabled: false } } }) });
    const doc = await servedDoc(app);
    expect([...mounted(app)].sort()).toEqual([...documented(doc)].sort());
    for (const r of [...FIVE, 'POST /keys', 'GET /endpoints/{hash}', 'PUT /configs/{config}/secret', 'PUT /config/{config}/script', 'POST /incoming/{name}'])
      expect(mounted(app), r).not.toContain(r);
    for (const r of ['POST /webhooks/{config}/enqueue', 'GET /webhooks/{id}/status', 'GET /stats', 'GET /health', 'GET /openapi.json']) expect(mounted(app), r).toContain(r);
    // Not mounted: a 404 like any unknown route (auth off here), never a handler answering 501.
    const res = await app.request('/deadletter?config_id=a');
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe('not_found');
  });

  it("the edge's runtime declaration: /incoming and the transformer listing on its bundled scripts, and the routes needing no optional capability", async () => {
    const edgeRoutes = ROUTES.filter((r) => servesRoute('edge', r)).map(routeKey);
    expect(edgeRoutes.sort()).toEqual(
      [
        'GET /health',
        'GET /health/dependencies',
        'GET /openapi.json',
        'GET /ready',
        'GET /stats',
        'GET /transformers',
        'GET /webhooks/:id/status',
        'POST /incoming/:name',
        'POST /webhooks/:config/enqueue',
        'POST /webhooks/:config/enqueue/batch',
      ].sort(),
    );
    // As edge/app.ts builds it: base deps and its bundled transformers (core's /incoming).
    const app = createApiApp({ ...base, transformers: { get: () => undefined, names: () => [] } });
    const doc = await servedDoc(app);
    expect([...mounted(app)].sort()).toEqual([...documented(doc)].sort());
    expect([...documented(doc)].sort()).toEqual(
      ROUTES.filter((r) => servesRoute('edge', r))
        .map((r) => `${r.method.toUpperCase()} ${openApiPath(r.path)}`)
        .sort(),
    );
    expect(() => createApiApp(base, { implementations: { 'POST /nowhere': () => [] } })).toThrow(/not a declared route/);
  });

  it('every config locator names a parameter its route has', () => {
    for (const r of ROUTES) {
      const c = r.config;
      if (!c || c.from === 'self') continue;
      if (c.from === 'query' || c.from === 'handler') expect(Object.keys(r.request?.query?.(config).shape ?? {}), routeKey(r)).toContain(c.name);
      else expect(r.path.split('/'), routeKey(r)).toContain(`:${c.name}`);
    }
    // A path naming a config is bound by it.
    for (const r of ROUTES.filter((x) => x.path.includes(':config'))) expect(r.config, routeKey(r)).toEqual({ from: 'param', name: 'config' });
  });

  it("README's API list names every declared route", () => {
    const readme = read('README.md');
    const section = readme.slice(readme.indexOf('## The API'), readme.indexOf('\n## ', readme.indexOf('## The API') + 1));
    const params = (s: string) => s.replace(/:\w+/g, ':_');
    for (const r of ROUTES) {
      const k = params(routeKey(r));
      expect(params(section).includes(`\`${k}\``) || params(section).includes(`\`${k}?`), routeKey(r)).toBe(true);
    }
  });
});

describe("howk-api's fleet serves the whole table", () => {
  let f: TestFleet;
  beforeAll(async () => {
    f = await startTestFleet('memory', { roles: { api: true, worker: false, scheduler: false } });
  });
  afterAll(() => f?.stop());

  it('its /openapi.json is docs/openapi.json with its own limits (every route, the five listing and redrive routes included)', async () => {
    const served = (await (await fetch(`${f.baseUrl}/openapi.json`)).json()) as any;
    expect(served).toEqual(buildOpenApi(f.config, ROUTES));
    expect([...documented(served)].sort()).toEqual([...documented(JSON.parse(read('docs/openapi.json')))].sort());
    for (const r of FIVE) expect(documented(served), r).toContain(r);
  });
});
