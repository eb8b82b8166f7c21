import type { Config } from '../../core/config/schema';
import { journaledGuards } from '../../core/pipeline/guard-journal';
import { startGuardReplica, type GuardReplica } from '../../core/pipeline/guard-replica';
import { topicSpecs } from '../../core/pipeline/topics';
import { systemClock, type Clock } from '../../core/ports/clock';
import type { Guards } from '../../core/ports/guards';
import type { EndedLookup, HotState } from '../../core/ports/hot-state';
import type { Log, LogProducer } from '../../core/ports/log';
import type { Logger } from '../../core/ports/logger';
import type { Sender } from '../../core/ports/sender';
import { startSecurityState, type SecurityState } from '../../core/security/runtime';
import type { SecretBox } from '../../core/signing/secret-box';
import { startScriptState, type ScriptState } from '../../core/scripts/store';
import { startAppState, type AppState } from '../../core/apps/runtime';
import type { KvStore } from '../../core/lua';
import { memoryKv } from '../../core/memory/lua-kv';
import { memoryOutcomeBus } from '../../core/memory/outcome-bus';
import { observedGuards } from '../../core/metrics/observed-guards';
import type { InboundReplays } from '../../core/ports/inbound-replays';
import type { OutcomeBus } from '../../core/ports/outcome-bus';
import type { KeyMirror } from '../redis/key-mirror';
import { createNodeMetrics, type NodeMetrics } from './metrics';
import { registerProbes } from './metric-probes';
import { nodeLuaServices, type NodeLuaServices } from './lua-services';
import { embedReconciler, type EmbeddedReconciler } from './reconciler';
import { startTracing, type NodeTracing } from './tracing';

// The start-up of a fleet process (fleet.ts) as stages over one Boot context: what every
// role reads (adapters, clock, metrics, tracing) and the shutdown steps the stages add.

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

export type Roles = Required<NonNullable<FleetParts['roles']>>;
/** A shutdown step, named so that a slow shutdown says which step waits. */
export type Stop = { name: string; run: () => Promise<void> };

export type Boot = {
  p: FleetParts;
  config: Config;
  logStore: Log;
  hot: HotState;
  log: Logger;
  clock: Clock;
  roles: Roles;
  /** The roles this process runs, joined ("api+worker"): its name in replicas and traces. */
  instance: string;
  metrics: NodeMetrics;
  tracing: NodeTracing | undefined;
  luaKv: KvStore;
  outcomes: OutcomeBus;
  /** Shutdown steps, in the order stop() runs them. */
  stops: Stop[];
};

/** What the api and the worker read, replayed into memory (undefined in a scheduler-only process). */
export type Replicas = {
  lua: NodeLuaServices | undefined;
  security: SecurityState | undefined;
  scripts: ScriptState | undefined;
  apps: AppState | undefined;
};

/** The guards as the roles use them: observed (worker), journaled to howk.guards, replicated. */
export type GuardChain = { journal: LogProducer | undefined; guards: Guards | undefined; guardCopy: GuardReplica | undefined };

/** The metrics of a process running `roles`: the api records the 'produced' stage, the worker every later one. */
export const fleetMetrics = (config: Config, roles: { api?: boolean; worker?: boolean }): NodeMetrics =>
  createNodeMetrics([...(roles.api ? (['produced'] as const) : []), ...(roles.worker ? (['fetched', 'admitted', 'sent', 'responded', 'durable', 'committed'] as const) : [])], {
    topEndpoints: config.metrics.top_endpoints,
  });

export const ensureTopics = async (p: FleetParts, roles: Roles): Promise<void> => {
  try {
    await p.logStore.admin.ensureTopics(topicSpecs(p.config));
  } catch (e) {
    // The api still starts (and answers 503 to enqueues) while the log is unreachable;
    // consumers cannot, so they rethrow.
    if (roles.worker || roles.scheduler) throw e;
    p.log.warn('could not ensure topics at start-up', { error: String(e) });
  }
};

export const bootOf = (p: FleetParts, roles: Roles): Boot => {
  const { config, logStore, hot } = p;
  const luaKv = p.luaKv ?? memoryKv();
  const outcomes = p.outcomes ?? memoryOutcomeBus();
  const metrics = p.metrics ?? fleetMetrics(config, roles);
  const on = Object.entries(roles)
    .filter(([, r]) => r)
    .map(([r]) => r);
  const instance = on.join('+');
  // One trace per webhook when tracing.enabled; the spans left are exported at the end of stop().
  const tracing = startTracing(config.tracing, on.length === 3 ? 'howk-dev' : `howk-${instance}`);
  if (roles.worker || roles.scheduler) registerProbes(metrics.pipeline, config, { logStore, hot, worker: roles.worker });
  return { p, config, logStore, hot, log: p.log, clock: p.clock ?? systemClock, roles, instance, metrics, tracing, luaKv, outcomes, stops: [] };
};

export const startReplicas = async (b: Boot): Promise<Replicas> => {
  const { config, logStore, log, clock, instance, roles, p } = b;
  if (!(roles.api || roles.worker)) return { lua: undefined, security: undefined, scripts: undefined, apps: undefined };
  // Lua http (SSRF-guarded fetch, lua.http_allowlist), credentials (HOWK_LUA_CRYPTO_*), ${VAR} templates.
  const lua = await nodeLuaServices(config, process.env, log, b.metrics.pipeline.luaRun);
  // API keys (api) and per-config signing secrets (api, worker): compacted topics replayed into memory.
  const keyFeed = roles.api && p.keyMirror ? { onKey: p.keyMirror.apply } : {};
  const security = startSecurityState({ config, logStore, log, box: p.secretBox, clock, keys: roles.api, secrets: true, ...keyFeed, instance });
  // Per-config delivery scripts (api, worker): the compacted howk.scripts topic replayed into memory.
  const scripts = startScriptState({ config, logStore, log, clock, instance });
  // Applications, endpoints, event types and messages of the Svix API (api; the worker reads
  // the model only, to dead-letter webhooks of disabled endpoints): replayed into memory.
  const apps = startAppState({ messages: roles.api, config, logStore, log, clock, box: p.secretBox, instance });
  return { lua, security, scripts, apps };
};

export const guardChainOf = (b: Boot): GuardChain => {
  const { p, roles, config, logStore, log, clock } = b;
  // Pauses, resumes and circuit transitions go to howk.guards too, so a rebuild restores them.
  const journal = p.guards && (roles.api || roles.worker) ? logStore.producer() : undefined;
  // The worker's admissions feed the per-endpoint metrics (circuit state, adaptive limits).
  const observed = p.guards && roles.worker ? observedGuards(p.guards, b.metrics.pipeline.endpoints) : p.guards;
  const guards = observed && journal ? journaledGuards(observed, { producer: journal, topic: config.kafka.topics.guards, log, now: () => clock.now() }) : observed;
  // The worker follows howk.guards: its pauses and open circuits hold while Redis is away.
  const guardCopy = guards && roles.worker && config.degraded.enabled ? startGuardReplica({ config, logStore, log, instance: b.instance }) : undefined;
  return { journal, guards, guardCopy };
};

/** Redis rebuild from Kafka (core/reconcile): the canary check runs before any consumer starts. */
export const startReconcile = async (b: Boot): Promise<EmbeddedReconciler | undefined> => {
  const { roles, config, metrics } = b;
  if (!((roles.worker || roles.scheduler) && config.reconciler.enabled)) return undefined;
  // Schedulers also run the orphan sweep (core/reconcile/orphans.ts).
  const orphans = roles.scheduler ? { onRepaired: metrics.pipeline.orphansRepaired } : undefined;
  const parts = { config, logStore: b.logStore, hot: b.hot, log: b.log, clock: b.clock, guards: b.p.guards, onRebuilt: metrics.pipeline.rebuilt, orphans };
  const reconcile = embedReconciler(parts, roles.worker ? 'worker' : 'scheduler');
  await reconcile.ready();
  b.stops.push({ name: 'reconciler', run: () => reconcile.stop() });
  return reconcile;
};

/** Runs the shutdown steps one after the other, warning while one is slow. */
export const stopAll = async (stops: Stop[], log: Logger): Promise<void> => {
  for (const s of stops) {
    const t0 = Date.now();
    const slow = setInterval(() => log.warn('shutdown step still running', { step: s.name, ms: Date.now() - t0 }), 2000);
    try {
      await s.run();
    } finally {
      clearInterval(slow);
    }
  }
};
