import { getConnInfo } from '@hono/node-server/conninfo';
import type { AppState } from '../../core/apps/runtime';
import type { Config } from '../../core/config/schema';
import { createMessages } from '../../core/apps/messages';
import { createApiApp, type DependencyCheck } from '../../core/http/app';
import { createChangeFeed } from '../../core/live/change-feed';
import type { KvStore } from '../../core/lua';
import { memoryInboundReplays } from '../../core/memory/inbound-replays';
import { batchingProducer } from '../../core/pipeline/batching-producer';
import { createEnqueuer } from '../../core/pipeline/enqueue';
import { readingOwnWrites } from '../../core/pipeline/pending-writes';
import { createSyncWaits } from '../../core/pipeline/sync-wait';
import type { Clock } from '../../core/ports/clock';
import type { Guards } from '../../core/ports/guards';
import type { HotState } from '../../core/ports/hot-state';
import type { InboundReplays } from '../../core/ports/inbound-replays';
import type { Log } from '../../core/ports/log';
import type { Logger } from '../../core/ports/logger';
import type { OutcomeBus } from '../../core/ports/outcome-bus';
import { createRedriver } from '../../core/reconcile/redrive';
import type { startScriptState } from '../../core/scripts/store';
import type { SecurityState } from '../../core/security/runtime';
import type { SecretBox } from '../../core/signing/secret-box';
import { createFleetGauges } from './gauges';
import { nodeHeaderSize } from './header-size';
import type { nodeLuaServices } from './lua-services';
import type { NodeMetrics } from './metrics';
import type { startTracing } from './tracing';
import { transformerRegistry } from './transformers';

/** What the api role takes of the fleet's parts (workers/node/fleet.ts FleetParts). */
type Parts = {
  config: Config;
  logStore: Log;
  hot: HotState;
  log: Logger;
  secretBox?: SecretBox;
  names?: { log: string; hot: string };
  scriptDirs?: string[];
  inboundReplays?: InboundReplays;
  /** The guards as given (the gauges read them unwrapped). */
  guards?: Guards;
};

export type ApiRoleParts = {
  p: Parts;
  clock: Clock;
  metrics: NodeMetrics;
  tracing: ReturnType<typeof startTracing>;
  outcomes: OutcomeBus;
  guards: Guards | undefined;
  security: SecurityState | undefined;
  scripts: ReturnType<typeof startScriptState> | undefined;
  luaKv: KvStore;
  lua: Awaited<ReturnType<typeof nodeLuaServices>> | undefined;
  apps: AppState | undefined;
};

/**
 * Ready only once the tables the API serves from Kafka are loaded: before that a script or
 * Svix write answers 503 "still loading" (seen right after /ready in a test that wrote a
 * script at once). A table that has loaded stays loaded, whatever Kafka does later.
 */
const tablesLoaded = (tables: Record<string, Promise<void> | undefined>): DependencyCheck => {
  const loading = new Set<string>();
  for (const [name, ready] of Object.entries(tables)) {
    if (!ready) continue;
    loading.add(name);
    void ready.then(
      () => loading.delete(name),
      () => undefined,
    );
  }
  return {
    name: 'tables',
    check: async () => {
      if (loading.size) throw new Error(`still loading from Kafka: ${[...loading].join(', ')}`);
    },
  };
};

/**
 * The end of the turn whose requests were read, for the api producer (no wait: two checks of
 * the event loop, no timer). One setImmediate was not enough: eight enqueues written on eight
 * connections at once reached the producer over two turns (measured, not traced: something
 * on the request path, likely the body's read, ends a turn later) and left in three produce
 * requests; two gather them into one (test/integration/enqueue-light-load.test.ts).
 */
const afterTheTurnsBodies = (fire: () => void): void => void setImmediate(() => setImmediate(fire));

/** The api role of a process: its enqueuer, first-outcome waits, event streams and the API app over them. */
export const apiRole = async ({ p, clock, metrics, tracing, outcomes, guards, security, scripts, luaKv, lua, apps }: ApiRoleParts) => {
  const { config, logStore, hot, log } = p;
  const { stages, events } = { stages: metrics.stages, events: metrics.pipeline.events };
  const producer = batchingProducer(logStore.producer(), config.api.produce_linger, undefined, afterTheTurnsBodies);
  const enqueue = createEnqueuer({ config, producer, hot, clock, secretBox: p.secretBox, log, stages, events, tracing, statusLingerMs: config.api.status_linger });
  // The 'pending' statuses wait up to api.status_linger: this instance's reads of statuses,
  // listings and stats write them first, so a client that was answered here sees its webhooks,
  // and so does the outstanding bound (api.max_outstanding_per_config), read only for a
  // config that has one: its enqueues pay a status write each, as before.
  const reads = readingOwnWrites(hot, enqueue.settle, ['getStatus', 'listWebhooks', 'stats', 'timeline', 'countOutstanding']);
  const dependencies: DependencyCheck[] = [
    { name: p.names?.log ?? 'log', check: () => logStore.admin.ping() },
    { name: p.names?.hot ?? 'hot_state', check: () => hot.ping() },
    tablesLoaded({ 'delivery scripts': scripts?.ready, applications: apps?.ready }),
  ];
  const sync = createSyncWaits({
    bus: outcomes,
    listener: `api-${crypto.randomUUID()}`,
    maxWaiting: config.api.sync_max_waiting,
    maxPerConfig: config.api.sync_max_waiting_per_config,
    log,
    meter: metrics.door,
  });
  await sync.start();
  const registry = await transformerRegistry([...config.transformer.script_dirs, ...(p.scriptDirs ?? [])], config.lua.max_script_bytes, log);
  const changes = createChangeFeed({
    listing: hot,
    maxSubscribers: config.api.events.max_subscribers,
    maxPerConfig: config.api.events.max_per_config,
    lifetimeMs: config.api.events.max_lifetime,
    intervalMs: config.api.events.poll_interval,
    heartbeatMs: config.api.events.heartbeat,
    onError: (e) => log.warn('event stream poll failed', { error: String(e) }),
  });
  const app = createApiApp({
    config,
    enqueue,
    hot: reads,
    listing: reads,
    log,
    clock,
    dependencies,
    guards,
    producer,
    keys: security?.keys,
    keyAdmin: security?.keys,
    configSecrets: security?.configSecrets,
    redrive: createRedriver({ config, hot, producer, clock, log, secretBox: p.secretBox }),
    transformers: registry,
    scripts: scripts?.store,
    luaKv,
    lua,
    inboundReplays: p.inboundReplays ?? memoryInboundReplays(() => clock.now()),
    remoteAddress: (c) => getConnInfo(c).remote.address,
    headerSize: nodeHeaderSize,
    metrics: metrics.exposition,
    outstanding: reads,
    sync,
    door: metrics.door,
    events,
    changes,
    overview: { timeline: (now, w) => reads.timeline(now, w), gauges: createFleetGauges({ hot, config, logStore, guards: p.guards, now: () => clock.now() }) },
    apps: apps && {
      store: apps.store,
      messages: createMessages({ config, store: apps.store, enqueue: (id, items) => enqueue(id, items), producer: apps.producer, clock, events }),
    },
  });
  return { app, producer, sync, changes, registry, statuses: enqueue.settle };
};
