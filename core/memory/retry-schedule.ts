import { allShards, claimAcross, configOfRetry, shardOf } from '../domain/retry-shards';
import { planShards } from '../domain/shard-leases';
import type { Clock } from '../ports/clock';
import type { RetryEntry } from '../ports/hot-state';

// The sharded retry schedule's claims and the schedulers' shard leases in memory, as the
// Redis adapter keeps them (workers/redis/retry-schedule.ts, claimShard-2.lua,
// retry-leases.ts): an equal share of a pass per shard, within a shard an equal share per
// config with due retries, and shard leases that run out.

export type RetryRow = { dueAt: number; data: string; expiresAt: number };

/**
 * One shard's claim: rounds of an equal part per config with due retries, earliest due first
 * within a config; configs in the order of `turns` (as claimShard-2.lua's configs zset: a config
 * served a full part goes behind the others until the next claim).
 */
const claimShard = (due: [string, RetryRow][], limit: number, now: number, lease: number, turns: Map<string, number>, out: RetryEntry[]): boolean => {
  const byConfig = new Map<string, [string, RetryRow][]>();
  for (const e of due.sort((a, b) => a[1].dueAt - b[1].dueAt || (a[0] < b[0] ? -1 : 1))) {
    const c = configOfRetry(e[1].data);
    const q = byConfig.get(c);
    if (q) q.push(e);
    else byConfig.set(c, [e]);
  }
  const turn = (c: string) => turns.get(c) ?? byConfig.get(c)![0]![1].dueAt;
  let active = [...byConfig.keys()].sort((a, b) => turn(a) - turn(b)).slice(0, limit);
  let got = 0;
  while (got < limit && active.length) {
    const part = Math.max(1, Math.floor((limit - got) / active.length));
    const still: string[] = [];
    for (const c of active) {
      if (got >= limit) break;
      const take = Math.min(part, limit - got);
      const q = byConfig.get(c)!;
      for (const [id, r] of q.splice(0, take)) {
        r.dueAt = lease;
        out.push({ id, dueAt: lease, data: r.data });
        got++;
      }
      if (q.length && take === part) {
        turns.set(c, now);
        still.push(c);
      } else if (!q.length) turns.delete(c);
    }
    active = still;
  }
  return got >= limit;
};

export const claimRetries = async (
  rows: Map<string, RetryRow>,
  n: number,
  now: number,
  limit: number,
  leaseMs: number,
  shards: readonly number[],
  start: number,
  /** Per shard, the configs' turns (claimShard). */
  turns: Map<number, Map<string, number>>,
): Promise<RetryEntry[]> => {
  for (const [id, r] of rows) if (r.expiresAt <= now) rows.delete(id);
  const due = new Map<number, [string, RetryRow][]>();
  for (const e of rows) {
    if (e[1].dueAt > now) continue;
    const s = shardOf(e[0], n);
    const g = due.get(s);
    if (g) g.push(e);
    else due.set(s, [e]);
  }
  const out: RetryEntry[] = [];
  await claimAcross(shards, limit, start, async (parts) => {
    const before = out.length;
    const turnsOf = (s: number) => turns.get(s) ?? turns.set(s, new Map()).get(s)!;
    const full = parts
      .filter(([s, k]) =>
        claimShard(
          (due.get(s) ?? []).filter(([, r]) => r.dueAt <= now),
          k,
          now,
          now + leaseMs,
          turnsOf(s),
          out,
        ),
      )
      .map(([s]) => s);
    return { full, got: out.length - before };
  });
  return out;
};

/** The schedulers' shard leases (core/domain/shard-leases.ts) in maps. */
export class MemoryShardLeases {
  private readonly holders = new Map<number, { owner: string; until: number }>();
  private readonly beats = new Map<string, number>();

  constructor(
    private readonly n: number,
    private readonly clock: Clock,
  ) {}

  private holder(s: number): string | undefined {
    const h = this.holders.get(s);
    return h && h.until > this.clock.now() ? h.owner : undefined;
  }

  hold(owner: string, now: number, leaseMs: number): number[] {
    this.beats.set(owner, now + leaseMs);
    for (const [o, until] of this.beats) if (until <= now) this.beats.delete(o);
    const plan = planShards(
      owner,
      allShards(this.n).map((s) => this.holder(s)),
      this.beats.size,
    );
    for (const s of plan.release) this.holders.delete(s);
    for (const s of [...plan.renew, ...plan.acquire]) this.holders.set(s, { owner, until: this.clock.now() + leaseMs });
    return [...plan.renew, ...plan.acquire].sort((a, b) => a - b);
  }

  release(owner: string): void {
    for (const s of allShards(this.n)) if (this.holder(s) === owner) this.holders.delete(s);
    this.beats.delete(owner);
  }
}
