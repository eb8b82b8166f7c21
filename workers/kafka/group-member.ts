import type { Consumer, Kafka } from 'kafkajs';
import type { ConsumerOptions } from '../../core/ports/log';
import { SortedRoundRobinAssigner } from './assigner';
import { heartbeatIntervalFor } from './session-timeout';
import { stickyAssigner } from './sticky-assigner';

export type MemberOptions = { rebalanceTimeoutMs?: number; maxWaitMs: number; minBytes?: number; maxBytesPerPartition: number };

/**
 * Makes the kafkajs consumer of one group member for a session timeout: heartbeats from it,
 * Howk's sticky assigner first; round-robin (in partition id order, under kafkajs' protocol name:
 * workers/kafka/assigner.ts) too, so that a group whose members run an older version agrees on
 * that one until they are all replaced.
 */
export const groupMember =
  (kafka: Kafka, k: MemberOptions, opts: ConsumerOptions) =>
  (sessionTimeout: number): Consumer => {
    const sticky = stickyAssigner();
    const c = kafka.consumer({
      groupId: opts.groupId,
      sessionTimeout,
      heartbeatInterval: heartbeatIntervalFor(sessionTimeout),
      rebalanceTimeout: k.rebalanceTimeoutMs ?? 10_000,
      partitionAssigners: [sticky.assigner, SortedRoundRobinAssigner],
      maxWaitTimeInMs: opts.idleWaitMs ?? k.maxWaitMs,
      minBytes: k.minBytes ?? 1,
      maxBytesPerPartition: k.maxBytesPerPartition,
      retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 5000 },
    });
    sticky.track(c);
    return c;
  };
