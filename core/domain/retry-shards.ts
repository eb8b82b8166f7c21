// The retry schedule in shards (docs/ARCHITECTURE.md, "The sharded retry schedule"): a webhook's
// retries, its delivery leases and its stored data always live in the shard of its id, so any
// process that knows an id (the worker acking a lease, the handoff ending a webhook, a rebuild)
// finds its shard without asking Redis.

/** Default of redis.retry_shards. */
export const DEFAULT_RETRY_SHARDS = 16;

/** The shard of a webhook id: FNV-1a (32 bit) of its UTF-16 code units, modulo the shard count. */
export const shardOf = (id: string, shards: number): number => {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % shards;
};

/** Groups items by the shard of their id, in first-seen order. */
export const byShard = <T>(items: readonly T[], idOf: (t: T) => string, shards: number): Map<number, T[]> => {
  const out = new Map<number, T[]>();
  for (const it of items) {
    const s = shardOf(idOf(it), shards);
    const g = out.get(s);
    if (g) g.push(it);
    else out.set(s, [it]);
  }
  return out;
};

/** All shard numbers 0..n-1. */
export const allShards = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/**
 * How the budget of one pass is shared by the shards it visits: an equal share each
 * (the remainder to the first ones), so a shard holding a storm takes no more of a pass than
 * one holding a single due retry.
 */
export const shareOf = (limit: number, shards: number, index: number): number => Math.floor(limit / shards) + (index < limit % shards ? 1 : 0);

/**
 * The config of a retry from its stored webhook (core/domain/webhook.ts encodeWebhook: the
 * fields before the payload, config_id among them), without parsing the payload; '' when
 * unreadable (the scheduler dead-letters such a record when it claims it).
 */
export const configOfRetry = (data: string): string => /"config_id":"([A-Za-z0-9._:-]{1,128})"/.exec(data)?.[1] ?? '';

/**
 * The pass of a retry (attempt + deferrals) from its stored webhook's fields before the payload,
 * without parsing the payload; -1 when unreadable. A retry write never replaces a scheduled
 * retry of a later pass (workers/redis/commands/addRetry-4.lua reads it the same way).
 */
export const passOfRetry = (data: string): number => {
  const m = /^\{.*?,"attempt":(\d+),"max_attempts":\d+(?:,"deferrals":(\d+),"created_at":|[,}])/.exec(data);
  return m ? Number(m[1]) + Number(m[2] ?? 0) : -1;
};

/**
 * A claim over several shards in rounds: each round shares what is left of `limit` equally
 * among the shards still open (those not asked yet, and those that filled their share, so may
 * hold more); a shard that gave fewer than its share is done. `start` rotates where the
 * shares begin, so with fewer to claim than shards each pass begins at another shard.
 * `round` claims the given shares and returns the shards that filled theirs and how many it got.
 */
export const claimAcross = async (
  shards: readonly number[],
  limit: number,
  start: number,
  round: (parts: [shard: number, n: number][]) => Promise<{ full: number[]; got: number }>,
): Promise<void> => {
  const k = shards.length ? start % shards.length : 0;
  let open = [...shards.slice(k), ...shards.slice(0, k)];
  let left = limit;
  while (left > 0 && open.length) {
    const parts = open.map((s, i): [number, number] => [s, shareOf(left, open.length, i)]);
    const { full, got } = await round(parts.filter(([, n]) => n > 0));
    left -= got;
    open = [...full, ...parts.filter(([, n]) => n === 0).map(([s]) => s)];
  }
};
