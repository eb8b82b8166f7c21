import type { Config } from '../config/schema';
import type { Log, LogProducer } from '../ports/log';
import type { Logger } from '../ports/logger';
import { startReplica } from '../security/replica';
import type { SecretBox } from '../signing/secret-box';
import { createAppStore, type AppStore } from './store';
import { AppTable } from './table';

export type AppState = { store: AppStore; producer: LogProducer; ready: Promise<void>; stop(): Promise<void> };

/** The Svix API's model of one api process: howk.applications and howk.messages replayed into memory by a replica of its own. */
/** `messages`: false for a worker, which needs the model only (core/apps/endpoint-rules.ts). */
export const startAppState = (o: { config: Config; logStore: Log; log: Logger; clock: { now(): number }; box?: SecretBox; instance: string; messages?: boolean }): AppState => {
  const table = new AppTable(o.config.svix.messages_kept_per_app, o.log);
  const producer = o.logStore.producer();
  const t = o.config.kafka.topics;
  const replica = startReplica({
    logStore: o.logStore,
    producer,
    topics: o.messages === false ? [t.applications] : [t.applications, t.messages],
    groupId: `${o.config.kafka.client_id}-apps-${o.instance}-${crypto.randomUUID().slice(0, 8)}`,
    log: o.log,
    apply: (_topic, key, value) => table.apply(key, value),
  });
  return {
    store: createAppStore({ config: o.config, table, producer, box: o.box, clock: o.clock, synced: () => replica.synced() }),
    producer,
    ready: replica.ready,
    stop: async () => {
      await replica.stop();
      await producer.close();
    },
  };
};
