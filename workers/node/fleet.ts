import type { ServerType } from '@hono/node-server';
import { listenApi } from './api-server';
import { apiRole } from './api-role';
import type { AddressInfo } from 'node:net';
import type { Config } from '../../core/config/schema';
import { journaledGuards } from '../../core/pipeline/guard-journal';
import { startGuardReplica } from '../../core/pipeline/guard-replica';
import type { Logger } from '../../core/ports/logger';
import { runScheduler } from '../../core/pipeline/scheduler';
import { topicSpecs } from '../../core/pipeline/topics';
import { startWorker } from '../../core/pipeline/worker';
import { systemClock, type Clock } from '../../core/ports/clock';
import type { Guards } from '../../core/ports/guards';
import type { EndedLookup, HotState } from '../../core/ports/hot-state';
import type { Log } from '../../core/ports/log';
import type { Sender } from '../../core/ports/sender';
import { startSecurityState, type SecurityState } from '../../core/security/runtime';
import type { SecretBox } from '../../core/signing/secret-box';
import { indexingDeadLetters } from '../../core/reconcile/deadletters';
import { startScriptState } from '../../core/scripts/store';
import { startAppState, type AppState } from '../../core/apps/runtime';
import { disabledEndpointGate, endpointPolicyOf, endpointThrottleOf } from '../../core/apps/gate';
import type { KvStore } from '../../core/lua';
import { memoryKv } from '../../core/memory/lua-kv';
import { createNodeMetrics, type NodeMetrics } from './metrics';
import { serveMetrics } from './metrics-server';
import { registerProbes } from './metric-probes';
import { startTracing } from './tracing';
import { observedGuards } from '../../core/metrics/observed-guards';
import { nodeHmacSha256 } from './hmac';
import { nodeLuaServices } from './lua-services';
import { embedReconciler } from './reconciler';
import type { ReloadableRegistry } from './transformers';
import { memoryOutcomeBus } from '../../core/memory/outcome-bus';
import type { OutcomeBus } from '../../core/ports/outcome-bus';
import type { InboundReplays } from '../../core/ports/inbound-replays';
import type { KeyMirror } from '../redis/key-mirror';

export type FleetParts = {
  config: Config;
  logStore: Log;
  hot: HotState;
  sender: Sender;
  log: Logger;
  secretBox?: SecretBox;
  /** Circuit breaker, penalty box, limits, pause (Redis in production, memory in howk-dev). */
  guards?: Guards;
  clock?: Clock;
  /** Which roles run in this process (all by default: howk-dev). */
  roles?: { api?: boolean; worker?: boolean; scheduler?: boolean };
  /** Names of the two dependencies on /ready and /health/dependencies. */
  names?: { log: string; hot: string };
  /** Transformer directories besides transformer.script_dirs (howk-dev --scripts-dir). */
  scriptDirs?: string[];
  /** Store of the Lua kv module; in memory (one process) when not given. */
  luaKv?: KvStore;
  /** Replay marks of signed /incoming requests (Redis across api processes); in memory (one process) when not given. */
  inboundReplays?: InboundReplays;
  /** Prometheus metrics of the process; made here when not given. */
  metrics?: NodeMetrics;
  /** How waiting enqueues learn first outcomes (Redis pub/sub across processes); in memory (one process) when not given. */
  outcomes?: OutcomeBus;
  /** Where the api mirrors the API-key table for the edge (Redis); none in howk-dev. */
  keyMirror?: KeyMirror;
  /** Ended statuses the worker reads for records a partition's last owner may have delivered (Redis); none in howk-dev. */
  ended?: EndedLookup;
};

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

/** The metrics of a process running `roles`: the api records the 'produced' stage, the worker every later one. */
export const fleetMetrics = (config: Config, roles: { api?: boolean; worker?: boolean }): NodeMetrics =>
  createNodeMetrics([...(roles.api ? (['produced'] as const) : []), ...(roles.worker ? (['fetched', 'admitted', 'sent', 'responded', 'durable', 'committed'] as const) : [])], {
    topEndpoints: config.metrics.top_endpoints,
  });

/** api + worker + scheduler over the given adapters, in one process (howk-dev, and tests). */
export const startFleet = async (p: FleetParts): Promise<Fleet> => {
  const { config, logStore, hot, log } = p;
  const clock = p.clock ?? systemClock;
  const roles = { api: true, worker: true, scheduler: true, ...p.roles };
  try {
    await logStore.admin.ensureTopics(topicSpecs(config));
  } catch (e) {
    // The api still starts (and answers 503 to enqueues) while the log is unreachable;
    // consumers cannot, so they rethrow.
    if (roles.worker || roles.scheduler) throw e;
    log.warn('could not ensure topics at start-up', { error: String(e) });
  }
  // Named, so that a slow shutdown says which step waits.
  const stops: { name: string; run: () => Promise<void> }[] = [];
  let server: ServerType | undefined;
  let baseUrl: string | undefined;
  let transformers: ReloadableRegistry | undefined;
  const luaKv = p.luaKv ?? memoryKv();
  const outcomes = p.outcomes ?? memoryOutcomeBus();
  const metrics = p.metrics ?? fleetMetrics(config, roles);
  const stages = metrics.stages;
  const events = metrics.pipeline.events;
  // One trace per webhook when tracing.enabled; the spans left are exported at the end of stop().
  const on = Object.entries(roles)
    .filter(([, r]) => r)
    .map(([r]) => r);
  const instance = on.join('+');
  const tracing = startTracing(config.tracing, on.length === 3 ? 'howk-dev' : `howk-${instance}`);
  if (roles.worker || roles.scheduler) registerProbes(metrics.pipeline, config, { logStore, hot, worker: roles.worker });
  // Lua http (SSRF-guarded fetch, lua.http_allowlist), credentials (HOWK_LUA_CRYPTO_*), ${VAR} templates.
  const lua = roles.api || roles.worker ? await nodeLuaServices(config, process.env, log, metrics.pipeline.luaRun) : undefined;
  // API keys (api) and per-config signing secrets (api, worker): compacted topics replayed into memory.
  const security =
    roles.api || roles.worker
      ? startSecurityState({
          config,
          logStore,
          log,
          box: p.secretBox,
          clock,
          keys: roles.api,
          secrets: true,
          ...(roles.api && p.keyMirror ? { onKey: p.keyMirror.apply } : {}),
          instance,
        })
      : undefined;

  // Per-config delivery scripts (api, worker): the compacted howk.scripts topic replayed into memory.
  const scripts =
    roles.api || roles.worker
      ? startScriptState({
          config,
          logStore,
          log,
          clock,
          instance,
        })
      : undefined;

  // Applications, endpoints, event types and messages of the Svix API (api; the worker reads
  // the model only, to dead-letter webhooks of disabled endpoints): replayed into memory.
  const apps =
    roles.api || roles.worker
      ? startAppState({
          messages: roles.api,
          config,
          logStore,
          log,
          clock,
          box: p.secretBox,
          instance,
        })
      : undefined;

  // Pauses, resumes and circuit transitions go to howk.guards too, so a rebuild restores them.
  const journal = p.guards && (roles.api || roles.worker) ? logStore.producer() : undefined;
  // The worker's admissions feed the per-endpoint metrics (circuit state, adaptive limits).
  const observed = p.guards && roles.worker ? observedGuards(p.guards, metrics.pipeline.endpoints) : p.guards;
  const guards = observed && journal ? journaledGuards(observed, { producer: journal, topic: config.kafka.topics.guards, log, now: () => clock.now() }) : observed;
  // The worker follows howk.guards: its pauses and open circuits hold while Redis is away.
  const guardCopy = guards && roles.worker && config.degraded.enabled ? startGuardReplica({ config, logStore, log, instance }) : undefined;

  // Redis rebuild from Kafka (core/reconcile): the canary check runs before any consumer starts.
  // Schedulers also run the orphan sweep (core/reconcile/orphans.ts).
  const orphans = roles.scheduler ? { onRepaired: metrics.pipeline.orphansRepaired } : undefined;
  const parts = { config, logStore, hot, log, clock, guards: p.guards, onRebuilt: metrics.pipeline.rebuilt, orphans };
  const reconcile = (roles.worker || roles.scheduler) && config.reconciler.enabled ? embedReconciler(parts, roles.worker ? 'worker' : 'scheduler') : undefined;
  if (reconcile) {
    await reconcile.ready();
    stops.push({ name: 'reconciler', run: () => reconcile.stop() });
  }

  if (roles.worker) {
    // Signing with a config's secret needs the secrets loaded before the first delivery.
    await security!.ready;
    const configSecrets = security!.configSecrets!;
    // Likewise the delivery scripts, and the Svix API's endpoints.
    await scripts!.ready;
    await apps!.ready;
    const scriptStore = scripts!.store;
    // Dead letters are indexed in the hot state once Kafka has them (GET /deadletter, replay).
    const producer = indexingDeadLetters(logStore.producer({ lingerMs: config.worker.outcome_linger }), hot, config.kafka.topics.deadletter);
    const w = await startWorker({
      config,
      logStore,
      producer,
      hot,
      sender: p.sender,
      clock,
      log,
      secretBox: p.secretBox,
      hmac: nodeHmacSha256,
      configSecrets: (id, at) => configSecrets.secretsFor(id, at),
      guards,
      deliveryScript: (id) => scriptStore.scriptFor(id),
      endpointDisabled: disabledEndpointGate(apps!.store.table),
      endpointThrottle: endpointThrottleOf(apps!.store.table),
      endpointPolicy: endpointPolicyOf(apps!.store.table),
      luaKv,
      lua,
      stages,
      outcomes,
      events,
      tracing,
      ended: p.ended,
      local: guardCopy?.local,
    });
    reconcile?.track(w.consumers);
    stops.push({ name: 'worker', run: () => w.stop() }, { name: 'worker producer', run: () => producer.close() });
    if (guardCopy) stops.push({ name: 'guards replica', run: () => guardCopy.stop() });
  }
  if (roles.scheduler) {
    const producer = logStore.producer();
    const abort = new AbortController();
    const loop = runScheduler({ config, hot: reconcile ? reconcile.gateClaims(hot) : hot, producer, clock, log }, abort.signal);
    stops.push(
      {
        name: 'scheduler',
        run: async () => {
          abort.abort();
          await loop;
        },
      },
      { name: 'scheduler producer', run: () => producer.close() },
    );
  }
  if (roles.api) {
    const { app, producer, sync, changes, registry } = await apiRole({ p, clock, metrics, tracing, outcomes, guards, security, scripts, luaKv, lua, apps });
    transformers = registry;
    stops.push({ name: 'first-outcome channel', run: () => sync.stop() });
    server = await listenApi(app.fetch, config, roles.worker && roles.scheduler ? 'howk-dev' : 'howk-api');
    const addr = server.address() as AddressInfo;
    baseUrl = `http://127.0.0.1:${addr.port}`;
    const srv = server;
    // Open event streams end first, or the server's close would wait for them.
    stops.unshift(
      { name: 'event streams', run: async () => changes.close() },
      { name: 'http server', run: () => new Promise<void>((r) => srv.close(() => r())) },
      { name: 'api producer', run: () => producer.close() },
    );
  }
  // After the api and the worker (stopped above), which record on it.
  if (journal) stops.push({ name: 'guards journal producer', run: () => journal.close() });
  // Independent of each other: stopped together (each replica's consumer may wait for Kafka).
  if (security || lua || scripts || apps)
    stops.push({
      name: 'replicas and lua services',
      run: async () => void (await Promise.all([security?.stop(), lua?.close(), scripts?.stop(), apps?.stop(), p.keyMirror?.stop()])),
    });
  let metricsUrl: string | undefined;
  if (config.metrics.port > 0) {
    const m = await serveMetrics(metrics, config.metrics.port, config.metrics.host, [
      { name: p.names?.log ?? 'log', check: () => logStore.admin.ping() },
      { name: p.names?.hot ?? 'hot_state', check: () => hot.ping() },
    ]);
    metricsUrl = m.url;
    stops.unshift({ name: 'metrics server', run: m.close });
  }
  if (tracing) stops.push({ name: 'tracing export', run: () => tracing.shutdown() });
  reconcile?.start();
  return {
    baseUrl,
    server,
    metrics,
    metricsUrl,
    security,
    transformers,
    apps,
    stop: async () => {
      for (const s of stops) {
        const t0 = Date.now();
        const slow = setInterval(() => log.warn('shutdown step still running', { step: s.name, ms: Date.now() - t0 }), 2000);
        try {
          await s.run();
        } finally {
          clearInterval(slow);
        }
      }
    },
  };
};
