import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiPath, routeKey } from '../../core/http/route';
import { ROUTES } from '../../core/http/route-table';
import { servesRoute } from '../../core/http/runtimes';
import { freePort } from '../helpers/procs';
import { edgeVars, fleetEnv, startEdge, type Edge } from './helpers/stack';

// The built Worker's routes come from core/http's route table: what it mounts is what its
// /openapi.json documents, and that is the edge's runtime declaration (core/http/runtimes.ts).
// A route is mounted when a request reaches a handler; an unmounted one gets the app's
// "no route for" 404.
describe('edge routes: mounted = documented', () => {
  let edge: Edge;

  beforeAll(async () => {
    // No bridge listens: mounted routes answer 4xx/503, never the not-found of an unknown route.
    edge = await startEdge(edgeVars(fleetEnv(), `http://127.0.0.1:${await freePort()}`, { HOWK_API_AUTH_ENABLED: 'false', HOWK_EDGE_PRODUCE_DEADLINE: '200ms' }));
  });
  afterAll(() => edge?.stop());

  const example = (path: string) => path.replace(':config', 'c1').replace(':hash', '0'.repeat(32)).replace(':name', 'nope').replace(':id', 'wh_x');
  const noRoute = async (method: string, path: string) => {
    const res = await fetch(edge.url + path, { method, headers: { 'content-type': 'application/json' }, body: method === 'GET' || method === 'DELETE' ? undefined : '{}' });
    const text = await res.text();
    return res.status === 404 && text.includes('"no route for ');
  };

  it('serves /openapi.json with exactly the routes it mounts, which are the edge runtime’s routes', async () => {
    const res = await fetch(`${edge.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as any;
    const documented = new Set(Object.entries(doc.paths as Record<string, object>).flatMap(([p, ms]) => Object.keys(ms).map((m) => `${m.toUpperCase()} ${p}`)));
    const declared = ROUTES.filter((r) => servesRoute('edge', r)).map((r) => `${r.method.toUpperCase()} ${openApiPath(r.path)}`);
    expect([...documented].sort()).toEqual(declared.sort());
    for (const op of Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((ms) => Object.values(ms))) expect(op['x-howk-runtimes']).toContain('edge');
    const mounted: string[] = [];
    for (const r of ROUTES) if (!(await noRoute(r.method.toUpperCase(), example(r.path)))) mounted.push(`${r.method.toUpperCase()} ${openApiPath(r.path)}`);
    expect(mounted.sort(), `mounted: ${mounted.join(', ')}`).toEqual([...documented].sort());
    // The five listing and redrive routes are howk-api's: not at the edge.
    for (const k of ['GET /webhooks', 'POST /webhooks/:id/retry', 'GET /deadletter', 'GET /deadletter/:id', 'POST /deadletter/:id/replay']) {
      expect(
        ROUTES.some((r) => routeKey(r) === k),
        k,
      ).toBe(true);
      expect(documented, k).not.toContain(k.replace(/:(\w+)/g, '{$1}'));
    }
  });
});
