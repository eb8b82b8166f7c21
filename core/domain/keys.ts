// The one Redis key builder (HOWK shapes, DESIGN.md §3). Every Redis key is made here.
export const keys = {
  status: (id: string) => `status:${id}`,
  /** The attempt history of a webhook (a capped list beside its status hash). */
  statusHistory: (id: string) => `status_history:${id}`,
  retries: () => 'retries',
  retryData: (id: string) => `retry_data:${id}`,
  idempotency: (configId: string, key: string) => `idempotency:${configId}:${key}`,
  circuit: (endpointHash: string) => `circuit:${endpointHash}`,
  concurrency: (endpointHash: string) => `concurrency:${endpointHash}`,
  domainConcurrency: (host: string) => `domain_concurrency:${host}`,
  /** Adaptive in-flight limit and latency estimate of an endpoint / a host (hash). */
  endpointLimit: (endpointHash: string) => `limit:${endpointHash}`,
  domainLimit: (host: string) => `domain_limit:${host}`,
  /** Recent latencies of an endpoint (list of "<at ms>:<ms>", newest first). */
  endpointLatency: (endpointHash: string) => `endpoint_latency:${endpointHash}`,
  /** Webhooks waiting at an endpoint's limit (zset, score: when they last asked). */
  endpointQueued: (endpointHash: string) => `endpoint_queued:${endpointHash}`,
  stats: (name: string, hourBucket: string) => `stats:${name}:${hourBucket}`,
  endpointsHll: (hourBucket: string) => `hll:endpoints:${hourBucket}`,
  /** 'paused' or 'draining' for an endpoint hash or a config id. */
  pause: (kind: 'endpoint' | 'config', id: string) => `paused:${kind}:${id}`,
  /** Webhooks held while paused, in arrival order. */
  pausedQueue: (kind: 'endpoint' | 'config', id: string) => `paused_queue:${kind}:${id}`,
  rateBucket: (endpointHash: string) => `rate:${endpointHash}`,
  endpointErrors: (endpointHash: string) => `endpoint_errors:${endpointHash}`,
  script: (configId: string) => `script:${configId}`,
  kv: (ns: string, key: string) => `kv:${ns}:${key}`,
  canary: () => 'howk:system:initialized',
  reconcilerLock: () => 'howk:reconciler:lock',
  // Listing indexes (rebuildable): lexicographic zsets of webhook ids (ULIDs sort by time).
  // The config id sits in braces: config ids cannot hold '}', so no two configs share a
  // key, and on Redis Cluster a config's indexes share a slot.
  /** Every webhook of a config. */
  webhookIndex: (configId: string) => `idx:webhooks:{${configId}}`,
  /** Webhooks of a config in one state; with state '' the prefix a Lua script completes. */
  webhookStateIndex: (configId: string, state: string) => `idx:webhooks:{${configId}}:state:${state}`,
  webhookEndpointIndex: (configId: string, endpointHash: string) => `idx:webhooks:{${configId}}:endpoint:${endpointHash}`,
  /** The latest dead letter of a webhook (hash: data, at, member, rix). */
  deadLetter: (webhookId: string) => `deadletter:${webhookId}`,
  /** Dead letters of a config: members `<dead_at ms, 13 digits>:<webhook id>`, lexicographic. */
  deadLetterIndex: (configId: string) => `idx:deadletters:{${configId}}`,
  deadLetterReasonIndex: (configId: string, reason: string) => `idx:deadletters:{${configId}}:reason:${reason}`,
} as const;
