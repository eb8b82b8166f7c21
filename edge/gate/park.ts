import type { Redis } from '@upstash/redis/cloudflare';
import { keys as singleKeys, type RedisKeys } from '../../core/domain/keys';
import { iso, nowNs } from '../../core/domain/time';
import { decodeWebhook } from '../../core/records/webhook';
import { snapshotValue, stateKey } from '../../core/records/state';
import type { KafkaRestRecord } from '../../core/ports/kafka-rest';

// A webhook whose endpoint has an open circuit is parked at the edge as the worker parks
// one (core/pipeline/deliver.ts): a howk.state snapshot (held: circuit_open, so a Redis
// rebuild restores it) and an entry in the retry schedule (`retries` + `retry_data:<id>`)
// due when the circuit lets a probe through. That is the schedule kept before the shards: the
// scheduler holding shard 0 moves the entry into its webhook's shard (docs/ARCHITECTURE.md, "The
// sharded retry schedule"), due time unchanged, and hands it to howk.pending then.
// The snapshot travels in the gate's produce with the request's other records; the schedule
// is written once Kafka acknowledged it, with NX (the edge adds entries, never replaces one).
// On a Redis Cluster both keys carry the `{retries}` tag (clusterKeys), the slot the
// scheduler's drain reads them from.

export type Parked = { value: string; until: number };

/** The howk.state record of a parked webhook. */
export const parkedRecord = (stateTopic: string, p: Parked, now: number): KafkaRestRecord => {
  const w = decodeWebhook(p.value);
  const status = { webhook_id: w.id, updated_at_ns: nowNs(now), state: 'pending' as const, held: 'circuit_open' as const, next_retry_at: iso(p.until) };
  return { topic: stateTopic, key: stateKey(w), value: snapshotValue(w, status, p.until, p.value) };
};

/** Adds the parked webhooks to the retry schedule (one pipeline through the bridge). */
export const schedule = async (redis: Redis, parked: readonly Parked[], retryDataTtlMs: number, keys: RedisKeys = singleKeys): Promise<void> => {
  const p = redis.pipeline();
  for (const x of parked) {
    const id = decodeWebhook(x.value).id;
    p.set(keys.retryData(id), x.value, { nx: true, px: retryDataTtlMs });
    p.zadd(keys.retries(), { nx: true }, { score: x.until, member: id });
  }
  await p.exec();
};
