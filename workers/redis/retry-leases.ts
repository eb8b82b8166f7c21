import type { RedisKeys } from '../../core/domain/keys';
import { allShards } from '../../core/domain/retry-shards';
import { planShards } from '../../core/domain/shard-leases';
import { execPipeline } from './exec';
import type { RedisRetrySchedule } from './retry-schedule';
import type { ScriptedClient } from './scripts';
import { pipe } from './slots';

// The schedulers' shard leases (core/domain/shard-leases.ts) and the drain of the pre-shard
// schedule, on Redis: two round trips per pass for the leases, one key per shard (in the
// shard's slot) and the heartbeat zset.

export class RedisShardLeases {
  constructor(
    private readonly redis: ScriptedClient,
    private readonly k: RedisKeys,
    private readonly schedule: RedisRetrySchedule,
  ) {}

  async hold(owner: string, now: number, leaseMs: number): Promise<number[]> {
    const n = this.schedule.shards;
    const p = pipe(this.redis);
    p.zadd(this.k.retrySchedulers(), now + leaseMs, owner)
      .zremrangebyscore(this.k.retrySchedulers(), '-inf', now)
      .zcard(this.k.retrySchedulers());
    for (const s of allShards(n)) p.get(this.k.retryShardLease(s));
    const replies = await execPipeline(p);
    const live = Number(replies[2]);
    const holders = replies.slice(3).map((v) => (v === null ? undefined : String(v)));
    const plan = planShards(owner, holders, live);
    const q = pipe(this.redis);
    for (const s of plan.renew) q.howk_renewLock(this.k.retryShardLease(s), owner, leaseMs);
    for (const s of plan.acquire) q.set(this.k.retryShardLease(s), owner, 'PX', leaseMs, 'NX');
    for (const s of plan.release) q.howk_releaseLock(this.k.retryShardLease(s), owner);
    if (!q.length) return [];
    const got = await execPipeline(q);
    const held = [...plan.renew, ...plan.acquire].filter((_, i) => got[i] === 1 || got[i] === 'OK');
    return held.sort((a, b) => a - b);
  }

  /** Gives back every shard this owner holds and leaves the live schedulers (at stop). */
  async release(owner: string): Promise<void> {
    const p = pipe(this.redis);
    for (const s of allShards(this.schedule.shards)) p.howk_releaseLock(this.k.retryShardLease(s), owner);
    p.zrem(this.k.retrySchedulers(), owner);
    await execPipeline(p);
  }

  /**
   * Moves up to `limit` entries of the pre-shard schedule (keys.retries(), written by versions
   * before the shards and by the edge's park) into their shards, due time and data as they
   * were, then removes them from it where they were not changed meanwhile. An entry its shard
   * already holds keeps the shard's (newer) schedule. Returns how many entries it looked at.
   */
  async drainLegacy(limit: number, ttlMs: number): Promise<number> {
    const flat = (await this.redis.zrange(this.k.retries(), 0, limit - 1, 'WITHSCORES')) as string[];
    if (!flat.length) return 0;
    const entries: { id: string; due: string }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) entries.push({ id: flat[i]!, due: flat[i + 1]! });
    const reads = pipe(this.redis);
    for (const e of entries) reads.get(this.k.retryData(e.id));
    const data = (await execPipeline(reads)) as (string | null)[];
    const moves = pipe(this.redis);
    entries.forEach((e, i) => {
      const d = data[i];
      if (d === null || d === undefined) return;
      const { keys, args } = this.schedule.restoreArgs(e.id, Number(e.due), d, ttlMs);
      moves.howk_restoreRetry(...keys, ...args);
    });
    if (moves.length) await execPipeline(moves);
    const shared = this.k.retryData('x') === this.k.shardRetryData(0, 'x');
    await this.redis.howk_dropLegacyRetries(this.k.retries(), shared ? '' : this.k.retryData(''), ...entries.flatMap((e) => [e.id, e.due]));
    return entries.length;
  }
}
