import type { z } from 'zod';
import { bool, intOrAuto } from './fields';

// The replication knobs of the kafka section, and the check that they agree.

export const replicationKnobs = {
  replication_factor: intOrAuto(
    'Replication factor of the topics Howk creates (at start-up and by `howk topics migrate`, which also raises it on existing topics); auto: 3 when three or more brokers answer, else the broker count',
    { min: 1 },
  ),
  min_insync_replicas: intOrAuto(
    'min.insync.replicas set on every Howk topic: replicas that must have a write before it is acknowledged (the producer asks acks=all); auto: 2 when the replication factor is 3 or more, else 1. At most the replication factor',
    { min: 1 },
  ),
  idempotent_producer: bool(
    false,
    'Produce idempotently (a producer id and sequence numbers per partition, so that a produce kafkajs retries is written once). Off by default: kafkajs 2.2.4 hands the sequence numbers of a failed request back, and Howk replaces the producer after each failed send to stay clear of it (docs/RELIABILITY.md, "Replicated Kafka")',
  ),
};

/** A topic whose min.insync.replicas exceeds its replicas refuses every acks=all write. */
export const checkReplication = (c: { kafka: { replication_factor: number | 'auto'; min_insync_replicas: number | 'auto' } }, ctx: z.RefinementCtx): void => {
  const { replication_factor: rf, min_insync_replicas: min } = c.kafka;
  if (typeof rf === 'number' && typeof min === 'number' && min > rf)
    ctx.addIssue({ code: 'custom', path: ['kafka', 'min_insync_replicas'], message: `is ${min}, above kafka.replication_factor (${rf}): every write would be refused` });
};
