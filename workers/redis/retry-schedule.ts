import { scriptPrefix, type RedisKeys } from '../../core/domain/keys';
import { allShards, byShard, claimAcross, configOfRetry, shardOf } from '../../core/domain/retry-shards';
import type { RetryEntry } from '../../core/ports/hot-state';
import { call, execPipeline } from './exec';
import type { ScriptedClient, ScriptedPipeline } from './scripts';
import { pipe } from './slots';

// The retry schedule on Redis in shards (docs/ARCHITECTURE.md, "The sharded retry schedule"):
// each call groups its ids by shard and sends one script call per shard, all in one round trip
// (on a cluster one pipeline per slot, workers/redis/slots.ts). Every script call keeps to one
// shard's keys, so one slot.

type Lease = { id: string; leaseDueAt: number };

export class RedisRetrySchedule {
  constructor(
    private readonly redis: ScriptedClient,
    private readonly k: RedisKeys,
    readonly shards: number,
  ) {}

  /** One script call in the webhook's shard (addRetry-4.lua): written unless a later pass of the webhook is scheduled there. */
  add(p: ScriptedPipeline, r: RetryEntry, ttlMs: number): void {
    const a = this.restoreArgs(r.id, r.dueAt, r.data, ttlMs);
    p.howk_addRetry(...a.keys, ...a.args);
  }

  /** Any schedule of these webhooks goes: one ZREM and one DEL per shard (the config queues catch up at the next claim), and their entries in the pre-shard schedule. */
  end(p: ScriptedPipeline, ids: readonly string[]): void {
    for (const [s, group] of byShard(ids, (id) => id, this.shards)) p.zrem(this.k.retryShard(s), ...group).del(...group.map((id) => this.k.shardRetryData(s, id)));
    p.zrem(this.k.retries(), ...ids);
    // On one Redis the pre-shard data key is a shard's data key, deleted above.
    if (this.k.retryData('x') !== this.k.shardRetryData(0, 'x')) p.del(...ids.map((id) => this.k.retryData(id)));
  }

  /** Passes so far: where the next claim's shares begin (claimAcross). */
  private passes = 0;

  /** Claims up to `limit` due retries from `shards` (default: all), shared as claimAcross says; one round trip per round. */
  async claim(now: number, limit: number, leaseMs: number, shards: readonly number[] = allShards(this.shards)): Promise<RetryEntry[]> {
    const out: RetryEntry[] = [];
    await claimAcross(shards, limit, this.passes++, async (parts) => {
      const before = out.length;
      return { full: await this.claimRound(now, leaseMs, parts, out), got: out.length - before };
    });
    return out;
  }

  /** One pipelined claimShard call per shard with a share; returns the shards that filled theirs. */
  private async claimRound(now: number, leaseMs: number, parts: readonly (readonly [number, number])[], out: RetryEntry[]): Promise<number[]> {
    const p = pipe(this.redis);
    for (const [s, n] of parts)
      p.howk_claimShard(this.k.retryShard(s), this.k.shardConfigs(s), now, n, now + leaseMs, this.k.shardRetryData(s, ''), scriptPrefix(this.k.shardConfigRetries(s, '')));
    const replies = (await execPipeline(p)) as string[][];
    const full: number[] = [];
    replies.forEach((flat, i) => {
      for (let j = 0; j + 2 < flat.length; j += 3) out.push({ id: flat[j]!, data: flat[j + 1]!, dueAt: Number(flat[j + 2]) });
      if (flat.length / 3 >= parts[i]![1]) full.push(parts[i]![0]);
    });
    return full;
  }

  async renew(items: { id: string; from: number; to: number }[]): Promise<number> {
    if (!items.length) return 0;
    const p = pipe(this.redis);
    for (const [s, group] of byShard(items, (i) => i.id, this.shards)) p.howk_renewLeases(this.k.retryShard(s), ...group.flatMap((i) => [i.id, i.from, i.to]));
    return ((await execPipeline(p)) as number[]).reduce((a, b) => a + Number(b), 0);
  }

  async ack(items: Lease[]): Promise<void> {
    if (!items.length) return;
    const p = pipe(this.redis);
    for (const [s, group] of byShard(items, (i) => i.id, this.shards))
      p.howk_ackRetries(this.k.retryShard(s), this.k.shardRetryData(s, ''), ...group.flatMap(({ id, leaseDueAt }) => [id, leaseDueAt]));
    await execPipeline(p);
  }

  /** Every shard's entries and the pre-shard schedule's (still to be drained). */
  async count(): Promise<number> {
    const p = pipe(this.redis);
    for (const s of allShards(this.shards)) p.zcard(this.k.retryShard(s));
    p.zcard(this.k.retries());
    return ((await execPipeline(p)) as number[]).reduce((a, b) => a + Number(b), 0);
  }

  /** The keys and arguments of restoreRetry-4.lua and addRetry-4.lua (the same) for a webhook's retry: a write, the rebuild, the drain. */
  restoreArgs(id: string, dueAt: number, data: string, ttlMs: number): { keys: string[]; args: (string | number)[] } {
    const s = shardOf(id, this.shards);
    const config = configOfRetry(data);
    return {
      keys: [this.k.retryShard(s), this.k.shardRetryData(s, id), this.k.shardConfigRetries(s, config), this.k.shardConfigs(s)],
      args: [id, dueAt, data, ttlMs, config],
    };
  }

  ping = () => call(() => this.redis.ping());
}
