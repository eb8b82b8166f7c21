// How schedulers share the retry shards (docs/ARCHITECTURE.md, "The sharded retry schedule"),
// the same on Redis and in memory: each pass a scheduler renews its heartbeat, counts the live
// schedulers, and aims at its fair part, ceil(shards / live): it renews the shard leases it
// holds up to that part, gives back the rest (a scheduler that just started finds them free),
// and takes free shards until it has its part. A lease is taken only when free (SET NX), so
// two schedulers never hold one shard; a dead scheduler's leases and heartbeat run out and
// the others take its shards over.

export type ShardPlan = { renew: number[]; release: number[]; acquire: number[] };

/**
 * What one scheduler does with the shards this pass. `holders[s]` is the owner of shard s's
 * lease (undefined: free). Free shards are tried from a place that depends on the owner, so
 * schedulers starting together do not all reach for the same ones.
 */
export const planShards = (owner: string, holders: readonly (string | undefined)[], live: number): ShardPlan => {
  const n = holders.length;
  const part = Math.ceil(n / Math.max(1, live));
  const mine = holders.flatMap((h, s) => (h === owner ? [s] : []));
  const renew = mine.slice(0, part);
  const release = mine.slice(part);
  let start = 0;
  for (let i = 0; i < owner.length; i++) start = (start * 31 + owner.charCodeAt(i)) % n;
  const acquire: number[] = [];
  for (let i = 0; i < n && renew.length + acquire.length < part; i++) {
    const s = (start + i) % n;
    if (holders[s] === undefined) acquire.push(s);
  }
  return { renew, release, acquire };
};
