import type { ServerType } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { disabledEndpointCheck, endpointPolicyOf, endpointThrottleOf } from '../../core/apps/endpoint-rules';
import { runScheduler } from '../../core/pipeline/scheduler';
import { startWorker } from '../../core/pipeline/worker';
import { indexingDeadLetters } from '../../core/reconcile/deadletters';
import { apiRole } from './api-role';
import { listenApi } from './api-server';
import type { Boot, GuardChain, Replicas } from './fleet-boot';
import { nodeHmacSha256 } from './hmac';
import type { EmbeddedReconciler } from './reconciler';
import type { ReloadableRegistry } from './transformers';

// The three roles of a fleet process, each started over the Boot context (fleet-boot.ts)
// and adding its own shutdown steps to it.

export const startWorkerRole = async (b: Boot, r: Replicas, g: GuardChain, reconcile: EmbeddedReconciler | undefined): Promise<void> => {
  const { config, logStore, hot, clock, log, p } = b;
  // Signing with a config's secret needs the secrets loaded before the first delivery.
  await r.security!.ready;
  const configSecrets = r.security!.configSecrets!;
  // Likewise the delivery scripts, and the Svix API's endpoints.
  await r.scripts!.ready;
  await r.apps!.ready;
  const scriptStore = r.scripts!.store;
  const table = r.apps!.store.table;
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
    guards: g.guards,
    deliveryScript: (id) => scriptStore.scriptFor(id),
    endpointDisabled: disabledEndpointCheck(table),
    endpointThrottle: endpointThrottleOf(table),
    endpointPolicy: endpointPolicyOf(table),
    luaKv: b.luaKv,
    lua: r.lua,
    stages: b.metrics.stages,
    outcomes: b.outcomes,
    events: b.metrics.pipeline.events,
    tracing: b.tracing,
    ended: p.ended,
    local: g.guardCopy?.local,
    afterTurn: setImmediate,
  });
  reconcile?.track(w.consumers);
  b.stops.push({ name: 'worker', run: () => w.stop() }, { name: 'worker producer', run: () => producer.close() });
  const guardCopy = g.guardCopy;
  if (guardCopy) b.stops.push({ name: 'guards replica', run: () => guardCopy.stop() });
};

export const startSchedulerRole = (b: Boot, reconcile: EmbeddedReconciler | undefined): void => {
  const { config, hot, clock, log } = b;
  const producer = b.logStore.producer();
  const abort = new AbortController();
  const loop = runScheduler({ config, hot: reconcile ? reconcile.gateClaims(hot) : hot, producer, clock, log }, abort.signal);
  b.stops.push(
    {
      name: 'scheduler',
      run: async () => {
        abort.abort();
        await loop;
      },
    },
    { name: 'scheduler producer', run: () => producer.close() },
  );
};

export type ApiUp = { server: ServerType; baseUrl: string; transformers: ReloadableRegistry | undefined };

export const startApiRole = async (b: Boot, r: Replicas, g: GuardChain): Promise<ApiUp> => {
  const { p, clock, metrics, tracing, outcomes, luaKv, roles, config } = b;
  const { app, producer, sync, changes, registry, statuses } = await apiRole({ p, clock, metrics, tracing, outcomes, guards: g.guards, ...r, luaKv });
  b.stops.push({ name: 'first-outcome channel', run: () => sync.stop() });
  const server = await listenApi(app.fetch, config, roles.worker && roles.scheduler ? 'howk-dev' : 'howk-api');
  const addr = server.address() as AddressInfo;
  // Open event streams end first, or the server's close would wait for them.
  b.stops.unshift(
    { name: 'event streams', run: async () => changes.close() },
    { name: 'http server', run: () => new Promise<void>((res) => server.close(() => res())) },
    { name: 'api producer', run: () => producer.close() },
    // The answered requests' 'pending' statuses that still wait (api.status_linger), before Redis closes.
    { name: 'api pending statuses', run: statuses },
  );
  return { server, baseUrl: `http://127.0.0.1:${addr.port}`, transformers: registry };
};
