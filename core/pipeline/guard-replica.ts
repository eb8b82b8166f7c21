import type { Config } from '../config/schema';
import type { Log } from '../ports/log';
import type { Logger } from '../ports/logger';
import { startReplica } from '../security/replica';
import { guardParams } from './guard-params';
import { createLocalGuards, type LocalGuards } from './local-guards';

export type GuardReplica = { local: LocalGuards; stop(): Promise<void> };

/**
 * The worker's own copy of howk.guards (the compacted topic of pauses and open circuits),
 * followed for as long as it runs: what admission goes by while Redis does not answer
 * (docs/RELIABILITY.md, "Redis unreachable: delivery degrades, it does not stop"). The worker
 * does not wait for it to catch up: with Redis up, Redis decides.
 */
export const startGuardReplica = (o: { config: Config; logStore: Log; log: Logger; instance: string }): GuardReplica => {
  const { degraded } = o.config;
  const local = createLocalGuards({ perEndpoint: degraded.max_inflight_per_endpoint, perHost: degraded.max_inflight_per_host }, guardParams(o.config).circuit, o.log);
  const producer = o.logStore.producer();
  const replica = startReplica({
    logStore: o.logStore,
    producer,
    topics: [o.config.kafka.topics.guards],
    groupId: `${o.config.kafka.client_id}-guards-${o.instance}-${crypto.randomUUID().slice(0, 8)}`,
    log: o.log,
    apply: (_topic, key, value) => local.applyRecord(key, value),
  });
  return {
    local,
    stop: async () => {
      await replica.stop();
      await producer.close();
    },
  };
};
