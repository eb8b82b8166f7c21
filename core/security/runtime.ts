import type { Config } from '../config/schema';
import type { Logger } from '../ports/logger';
import type { Log } from '../ports/log';
import type { SecretBox } from '../signing/secret-box';
import { KeyTable } from './api-keys';
import { ConfigSecretTable, createConfigSecrets, type ConfigSecrets } from './config-secrets';
import { createKeyService, type KeyService } from './key-service';
import { startReplica } from './replica';

export type SecurityState = {
  keys?: KeyService;
  configSecrets?: ConfigSecrets;
  /** Resolves once the replica has caught up with the topics. */
  ready: Promise<void>;
  lastAppliedAt(): number;
  stop(): Promise<void>;
};

export type SecurityOptions = {
  config: Config;
  logStore: Log;
  log: Logger;
  box?: SecretBox;
  clock: { now(): number };
  /** The api needs keys and secrets; a worker only secrets. */
  keys: boolean;
  secrets: boolean;
  /** Distinguishes this instance's replica group (role, process). */
  instance: string;
  /** Each API key record as it is applied (the edge's mirror of the key table). */
  onKey?: (id: string, value: string | null) => void;
};

/** The key table and config secrets of one process, replicated from their compacted topics by one consumer. */
export const startSecurityState = (o: SecurityOptions): SecurityState => {
  const t = o.config.kafka.topics;
  const topics = [...(o.keys ? [t.keys] : []), ...(o.secrets ? [t.config_secrets] : [])];
  const keyTable = new KeyTable(o.log);
  const secretTable = new ConfigSecretTable(o.log);
  const producer = o.logStore.producer();
  const replica = startReplica({
    logStore: o.logStore,
    producer,
    topics,
    groupId: `${o.config.kafka.client_id}-replica-${o.instance}-${crypto.randomUUID().slice(0, 8)}`,
    log: o.log,
    apply: (topic, key, value) => {
      if (topic !== t.keys) return secretTable.apply(key, value);
      // The edge's mirror follows the table: a record the table did not apply is not mirrored either.
      if (keyTable.apply(key, value) !== 'malformed') o.onKey?.(key, value);
    },
  });
  const synced = () => replica.synced();
  return {
    keys: o.keys ? createKeyService({ table: keyTable, producer, topic: t.keys, clock: o.clock, synced }) : undefined,
    configSecrets: o.secrets
      ? createConfigSecrets({ table: secretTable, producer, topic: t.config_secrets, box: o.box, clock: o.clock, overlapMs: o.config.signing.rotation_overlap, synced })
      : undefined,
    ready: replica.ready,
    lastAppliedAt: replica.lastAppliedAt,
    stop: async () => {
      await replica.stop();
      await producer.close();
    },
  };
};
