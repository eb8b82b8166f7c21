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
  stats: (name: string, hourBucket: string) => `stats:${name}:${hourBucket}`,
  endpointsHll: (hourBucket: string) => `hll:endpoints:${hourBucket}`,
  script: (configId: string) => `script:${configId}`,
  kv: (ns: string, key: string) => `kv:${ns}:${key}`,
  canary: () => 'howk:system:initialized',
  reconcilerLock: () => 'howk:reconciler:lock',
} as const;
