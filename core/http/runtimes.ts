import { routeKey, type Capability, type Route } from './route';

// The runtimes that serve the HTTP API, and what each provides. An app mounts a route when
// its deps hold every capability the route needs, or when the runtime brings its own handler
// of it; the runtime's /openapi.json lists only what it mounts. Every operation of the
// OpenAPI document names the runtimes that serve it (`x-howk-runtimes`, from this table; a
// test builds each runtime's app and checks it mounts exactly these routes).

export type RuntimeName = 'howk-api' | 'howk-dev' | 'edge';

const ALL: readonly Capability[] = ['listing', 'redrive', 'guards', 'keyAdmin', 'configSecrets', 'scripts', 'transformers', 'outstanding', 'events', 'overview'];

export const RUNTIMES: Record<RuntimeName, { capabilities: readonly Capability[]; /** Routes it serves with a handler of its own. */ implements?: readonly string[] }> = {
  'howk-api': { capabilities: ALL },
  'howk-dev': { capabilities: ALL },
  // Enqueue through the DomainGates, status reads over the Redis REST dialect, /incoming on bundled transformers.
  edge: { capabilities: ['transformers'] },
};

export const servesRoute = (runtime: RuntimeName, r: Route): boolean => {
  const rt = RUNTIMES[runtime];
  return (rt.implements ?? []).includes(routeKey(r)) || (r.needs ?? []).every((n) => rt.capabilities.includes(n));
};

export const runtimesOf = (r: Route): RuntimeName[] => (Object.keys(RUNTIMES) as RuntimeName[]).filter((n) => servesRoute(n, r));
