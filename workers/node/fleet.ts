import type { ServerType } from '@hono/node-server';
import type { SecurityState } from '../../core/security/runtime';
import type { AppState } from '../../core/apps/runtime';
import { bootOf, ensureTopics, guardChainOf, startReconcile, startReplicas, stopAll, type Boot, type FleetParts, type GuardChain, type Replicas } from './fleet-boot';
import { startApiRole, startSchedulerRole, startWorkerRole, type ApiUp } from './fleet-roles';
import type { NodeMetrics } from './metrics';
import { serveMetrics } from './metrics-server';
import type { ReloadableRegistry } from './transformers';

export { fleetMetrics, type FleetParts } from './fleet-boot';

export type Fleet = {
  baseUrl: string | undefined;
  server: ServerType | undefined;
  metrics: NodeMetrics;
  /** GET /metrics on metrics.port, when set */ metricsUrl?: string;
  stop: () => Promise<void>;
  /** API keys and config secrets of this process */ security?: SecurityState;
  /** /incoming transformers of the api (reload() on SIGHUP) */ transformers?: ReloadableRegistry;
  /** Applications, endpoints and messages of the Svix API (api) */ apps?: AppState;
};

/** api + worker + scheduler over the given adapters, in one process (howk-dev, and tests). */
export const startFleet = async (p: FleetParts): Promise<Fleet> => {
  const roles = { api: true, worker: true, scheduler: true, ...p.roles };
  await ensureTopics(p, roles);
  const b = bootOf(p, roles);
  const r = await startReplicas(b);
  const g = guardChainOf(b);
  const reconcile = await startReconcile(b);
  if (roles.worker) await startWorkerRole(b, r, g, reconcile);
  if (roles.scheduler) startSchedulerRole(b, reconcile);
  const api: ApiUp | undefined = roles.api ? await startApiRole(b, r, g) : undefined;
  addClosingStops(b, r, g);
  const metricsUrl = await startMetricsServer(b);
  if (b.tracing) {
    const tracing = b.tracing;
    b.stops.push({ name: 'tracing export', run: () => tracing.shutdown() });
  }
  reconcile?.start();
  return {
    baseUrl: api?.baseUrl,
    server: api?.server,
    metrics: b.metrics,
    metricsUrl,
    security: r.security,
    transformers: api?.transformers,
    apps: r.apps,
    stop: () => stopAll(b.stops, b.log),
  };
};

/** The steps that must wait until the roles that use them have stopped. */
const addClosingStops = (b: Boot, r: Replicas, g: GuardChain): void => {
  const { journal } = g;
  // After the api and the worker (stopped above), which record on it.
  if (journal) b.stops.push({ name: 'guards journal producer', run: () => journal.close() });
  // Independent of each other: stopped together (each replica's consumer may wait for Kafka).
  if (r.security || r.lua || r.scripts || r.apps)
    b.stops.push({
      name: 'replicas and lua services',
      run: async () => void (await Promise.all([r.security?.stop(), r.lua?.close(), r.scripts?.stop(), r.apps?.stop(), b.p.keyMirror?.stop()])),
    });
};

/** GET /metrics on metrics.port, stopped first; its URL, or undefined when the port is 0. */
const startMetricsServer = async (b: Boot): Promise<string | undefined> => {
  const { config, p } = b;
  if (!(config.metrics.port > 0)) return undefined;
  const m = await serveMetrics(b.metrics, config.metrics.port, config.metrics.host, [
    { name: p.names?.log ?? 'log', check: () => b.logStore.admin.ping() },
    { name: p.names?.hot ?? 'hot_state', check: () => b.hot.ping() },
  ]);
  b.stops.unshift({ name: 'metrics server', run: m.close });
  return m.url;
};
