// The one Redis key builder. Every Redis key is made here.
//
// A caller-chosen string (config id, transformer name) that is followed by more of the key
// sits in braces: `idempotency:{tenantA:x}:order-1` and `idempotency:{tenantA}:x:order-1`
// differ, where joining with ':' made both `idempotency:tenantA:x:order-1`. Config ids and
// transformer names cannot hold '{', '}' or '%' (CONFIG_ID, TRANSFORMER_NAME), so the tag is
// the id itself; anything else is percent-encoded, so no input can close the brace early.
// On Redis Cluster the braces are the hash tag: one config's keys share a slot.
// Keys that end in a single caller-chosen string (`paused:config:<id>`,
// `domain_inflight:<host>`) are unambiguous as they are and keep their shape.

/** `{id}`: the id as a hash tag that no id can break out of. */
export const tag = (id: string): string => `{${id.replace(/[%{}]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}}`;

/** Whose kv store a Lua script uses: a transformer's and a config's never meet. */
export type KvScope = { kind: 'transformer' | 'config'; id: string };

export const keys = {
  status: (id: string) => `status:${id}`,
  /** The attempt history of a webhook (a capped list beside its status hash). */
  statusHistory: (id: string) => `status_history:${id}`,
  /**
   * The retry schedule before it was sharded: still read (schedulers drain it into the shards,
   * workers/redis/retry-drain.ts) and still written by the edge's park (edge/gate/park.ts).
   */
  retries: () => 'retries',
  /** The stored webhook of an entry of `retries`. */
  retryData: (id: string) => `retry_data:${id}`,
  /** One shard of the retry schedule (zset, member: webhook id, score: due time ms). */
  retryShard: (shard: number) => `retries:${shard}`,
  /** The stored webhook of a retry in a shard; on one Redis the key it always had. */
  shardRetryData: (shard: number, id: string) => `retry_data:${id}`,
  /** A config's due retries within a shard (zset like the shard's), for per-config fairness. */
  shardConfigRetries: (shard: number, configId: string) => `retries:${shard}:config:${tag(configId)}`,
  /** The configs with retries in a shard (zset, score: the earliest due time seen for it). */
  shardConfigs: (shard: number) => `retries:${shard}:configs`,
  /** Which scheduler holds a shard (string, owner id, expires with the lease). */
  retryShardLease: (shard: number) => `retry_shard_lease:${shard}`,
  /** The live schedulers (zset, member: owner id, score: when its heartbeat runs out, ms). */
  retrySchedulers: () => 'retry_schedulers',
  idempotency: (configId: string, key: string) => `idempotency:${tag(configId)}:${key}`,
  /**
   * The shape idempotency keys had before the config id was tagged. Only read (never
   * written), so that a key claimed just before an upgrade still dedupes until it expires.
   */
  legacyIdempotency: (configId: string, key: string) => `idempotency:${configId}:${key}`,
  circuit: (endpointHash: string) => `circuit:${endpointHash}`,
  /**
   * Deliveries in flight to an endpoint / a host: a zset of leases (member: webhook id,
   * score: when the lease runs out, ms). Earlier versions kept plain counters under
   * `concurrency:<hash>` and `domain_concurrency:<host>`; nothing reads or writes those any
   * more, they are left to the TTL the old version gave them (2 min by default).
   */
  inflight: (endpointHash: string) => `inflight:${endpointHash}`,
  domainInflight: (host: string) => `domain_inflight:${host}`,
  /** Adaptive in-flight limit and latency estimate of an endpoint / a host (hash). */
  endpointLimit: (endpointHash: string) => `limit:${endpointHash}`,
  domainLimit: (host: string) => `domain_limit:${host}`,
  /** Recent latencies of an endpoint (list of "<at ms>:<ms>", newest first). */
  endpointLatency: (endpointHash: string) => `endpoint_latency:${endpointHash}`,
  /** Webhooks waiting at an endpoint's limit (zset, score: when they last asked). */
  endpointQueued: (endpointHash: string) => `endpoint_queued:${endpointHash}`,
  stats: (name: string, hourBucket: string) => `stats:${name}:${hourBucket}`,
  endpointsHll: (hourBucket: string) => `hll:endpoints:${hourBucket}`,
  /** Outcome counters of one timeline bucket (hash, field: stat name): `timeline:60:<start ms>`. */
  timeline: (bucketSeconds: number, startMs: number) => `timeline:${bucketSeconds}:${startMs}`,
  /** 'paused' or 'draining' for an endpoint hash or a config id. */
  pause: (kind: 'endpoint' | 'config', id: string) => `paused:${kind}:${id}`,
  /** Webhooks held while paused, in arrival order. */
  pausedQueue: (kind: 'endpoint' | 'config', id: string) => `paused_queue:${kind}:${id}`,
  rateBucket: (endpointHash: string) => `rate:${endpointHash}`,
  /** A Svix endpoint's own token bucket (its throttleRate), beside its URL's guard keys. */
  endpointThrottle: (endpointHash: string, endpointId: string) => `throttle:${endpointHash}:${endpointId}`,
  endpointErrors: (endpointHash: string) => `endpoint_errors:${endpointHash}`,
  /** A Lua kv entry: `kv:t:{transformer}:<key>` or `kv:c:{config}:<key>`. */
  kv: (scope: KvScope, key: string) => `kv:${scope.kind === 'transformer' ? 't' : 'c'}:${tag(scope.id)}:${key}`,
  /**
   * A signed inbound request seen by a transformer (core/ports/inbound-replays.ts): '' while its
   * first copy runs, then that copy's answer; `digest` is the SHA-256 (hex) of the verifier's mark.
   */
  inboundReplay: (transformer: string, digest: string) => `${keys.inboundReplayPrefix()}${tag(transformer)}:${digest}`,
  inboundReplayPrefix: () => 'inbound_replay:',
  /** Pub/sub channel of one api instance: the first outcomes of the webhooks it waits for (core/ports/outcome-bus.ts). */
  firstOutcomes: (listener: string) => `first_outcomes:${tag(listener)}`,
  /**
   * The API-key table mirrored from the keys topic for the edge (hash: key id → record JSON,
   * hashes of tokens only). Rebuildable: the fleet writes it again from its replica.
   */
  apiKeys: () => 'howk:keys',
  canary: () => 'howk:system:initialized',
  reconcilerLock: () => 'howk:reconciler:lock',
  // Listing indexes (rebuildable): lexicographic zsets of webhook ids (ULIDs sort by time).
  /** Every webhook of a config. */
  webhookIndex: (configId: string) => `idx:webhooks:${tag(configId)}`,
  /** Webhooks of a config in one state; with state '' the prefix a Lua script completes. */
  webhookStateIndex: (configId: string, state: string) => `idx:webhooks:${tag(configId)}:state:${state}`,
  webhookEndpointIndex: (configId: string, endpointHash: string) => `idx:webhooks:${tag(configId)}:endpoint:${endpointHash}`,
  /** On a Redis Cluster: each indexed webhook's stamp and state (hash), which orders the index moves (indexWebhook-3.lua). */
  webhookIndexRecord: (configId: string) => `idx:webhooks:${tag(configId)}:record`,
  /** The latest dead letter of a webhook (hash: data, at, member, rix). */
  deadLetter: (webhookId: string) => `deadletter:${webhookId}`,
  /** Dead letters of a config: members `<dead_at ms, 13 digits>:<webhook id>`, lexicographic. */
  deadLetterIndex: (configId: string) => `idx:deadletters:${tag(configId)}`,
  deadLetterReasonIndex: (configId: string, reason: string) => `idx:deadletters:${tag(configId)}:reason:${reason}`,
  /** Never written: stands in for a pause key an admission must not check (a webhook its drain released). */
  unset: () => 'howk:unset',
} as const;

/** The key builder HotState and Guards use: `keys`, or on a Redis Cluster `clusterKeys`. */
export type RedisKeys = { readonly [K in keyof typeof keys]: (typeof keys)[K] };

/** The tag of the retry schedule's slot: the schedule and every retry's data share it. */
const RETRIES = tag('retries');
/** The tag of a retry shard: its schedule, its data, its config queues and its lease share it. */
const shardTag = (shard: number): string => tag(`retries:${shard}`);
/** The tag of the counters: PFCOUNT and MGET over several hours need them in one slot. */
const STATS = tag('stats');

/**
 * The keys on a Redis Cluster: every key a script call or a MULTI touches shares a hash tag,
 * the owner of the decision (docs/ARCHITECTURE.md, "Redis Cluster: what stays atomic"):
 * an endpoint's guard keys `{<endpoint hash>}`, a host's `{<host>}`, a config's pause
 * `{<config>}`, a webhook's status and dead letter `{<webhook id>}`, the retry schedule and
 * its data `{retries}`, the counters `{stats}`. Keys with the config already tagged, and
 * single keys, keep their shape. A single Redis keeps `keys` (its data stays where it is).
 */
export const clusterKeys: RedisKeys = {
  ...keys,
  status: (id) => keys.status(tag(id)),
  statusHistory: (id) => keys.statusHistory(tag(id)),
  retryData: (id) => `retry_data:${RETRIES}:${id}`,
  // No claim was ever made on a cluster in the shape before the tags: the claim is its own legacy.
  legacyIdempotency: (configId, key) => keys.idempotency(configId, key),
  circuit: (h) => keys.circuit(tag(h)),
  inflight: (h) => keys.inflight(tag(h)),
  domainInflight: (host) => keys.domainInflight(tag(host)),
  endpointLimit: (h) => keys.endpointLimit(tag(h)),
  domainLimit: (host) => keys.domainLimit(tag(host)),
  endpointLatency: (h) => keys.endpointLatency(tag(h)),
  endpointQueued: (h) => keys.endpointQueued(tag(h)),
  retries: () => `retries:${RETRIES}`,
  // Each shard its own tag, so the shards spread over the slots (and the masters).
  retryShard: (shard) => `retries:${shardTag(shard)}`,
  shardRetryData: (shard, id) => `retry_data:${shardTag(shard)}:${id}`,
  shardConfigRetries: (shard, configId) => `retries:${shardTag(shard)}:config:${tag(configId)}`,
  shardConfigs: (shard) => `retries:${shardTag(shard)}:configs`,
  retryShardLease: (shard) => `retry_shard_lease:${shardTag(shard)}`,
  retrySchedulers: () => `retry_schedulers:${RETRIES}`,
  stats: (name, bucket) => `stats:${STATS}:${name}:${bucket}`,
  endpointsHll: (bucket) => `hll:endpoints:${STATS}:${bucket}`,
  pause: (kind, id) => keys.pause(kind, tag(id)),
  pausedQueue: (kind, id) => keys.pausedQueue(kind, tag(id)),
  rateBucket: (h) => keys.rateBucket(tag(h)),
  endpointThrottle: (h, id) => keys.endpointThrottle(tag(h), id),
  endpointErrors: (h) => keys.endpointErrors(tag(h)),
  deadLetter: (id) => keys.deadLetter(tag(id)),
};

/** The id as the scripts that build keys from a prefix must be given it (`prefix .. id`). */
export const slotId = (cluster: boolean, id: string): string => (cluster ? tag(id) : id);

/**
 * A layout with every key under `ns` (the hash tags stay inside, so the slots do not change):
 * tests sharing one cluster keep their keys apart this way (a cluster has no databases).
 */
export const namespaced = (base: RedisKeys, ns: string): RedisKeys =>
  Object.fromEntries(Object.entries(base).map(([name, fn]) => [name, (...a: never[]) => ns + (fn as (...x: never[]) => string)(...a)])) as unknown as RedisKeys;

/**
 * The prefix a script completes with an id (`prefix .. id`): a key built for the id '' without
 * its empty tag (`circuit:{}` → `circuit:`); on a cluster the id then goes as its tag (slotId).
 */
export const scriptPrefix = (emptyKey: string): string => (emptyKey.endsWith('{}') ? emptyKey.slice(0, -2) : emptyKey);
