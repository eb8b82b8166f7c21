import { keys } from '../domain/keys';
import { HISTORY_LIMIT, TERMINAL_STATES, type AttemptRecord, type WebhookStatus } from '../domain/status';
import { hourBucket } from '../domain/time';
import type { Clock } from '../ports/clock';
import { MemoryRecovery, type MemoryTables } from './recovery';
import { expirySweeper } from './sweep';
import { claimRetries, MemoryShardLeases, type RetryRow } from './retry-schedule';
import { allShards, DEFAULT_RETRY_SHARDS, passOfRetry } from '../domain/retry-shards';
import { MemoryTimeline } from './timeline';
import type { TimelineWindow } from '../domain/timeline';
import { STAT_NAMES, type HotBatch, type HotState, type HotTtls, type IdempotencyClaim, type RetryEntry, type StatsWindow } from '../ports/hot-state';

// howk-dev's hot state: the same semantics as the Redis adapter (LWW status, leased
// retries, hourly stats with TTL), held in maps.

type Expiring<T> = { value: T; expiresAt: number };

/** Nanosecond stamps as decimal strings: a longer one is larger; equal lengths compare as text. */
const newerStamp = (a: string, b: string): boolean => (a.length !== b.length ? a.length > b.length : a > b);

export class MemoryHotState implements HotState {
  private idem = new Map<string, Expiring<string>>();
  private statuses = new Map<string, Expiring<{ status: WebhookStatus; history: AttemptRecord[] }>>();
  private retries = new Map<string, RetryRow>();
  private counters = new Map<string, Expiring<number>>();
  private endpoints = new Map<string, Expiring<Set<string>>>();
  /** Per config, its webhooks whose stored status is not terminal (what Redis's state indexes give). */
  private outstanding = new Map<string, Set<string>>();
  private readonly timelines = new MemoryTimeline();

  readonly retryShards: number;
  /** Claims so far: where the next one's shares begin (core/domain/retry-shards.ts claimAcross). */
  private passes = 0;
  /** Per shard, when each config served a full part last (core/memory/retry-schedule.ts claimShard). */
  private readonly turns = new Map<number, Map<string, number>>();
  private readonly shardLeases: MemoryShardLeases;

  constructor(
    private readonly ttls: HotTtls,
    private readonly clock: Clock,
  ) {
    this.retryShards = ttls.retry_shards ?? DEFAULT_RETRY_SHARDS;
    this.shardLeases = new MemoryShardLeases(this.retryShards, clock);
  }

  private live<T>(m: Map<string, Expiring<T>>, k: string): T | undefined {
    const e = m.get(k);
    if (!e) return undefined;
    if (e.expiresAt <= this.clock.now()) {
      m.delete(k);
      return undefined;
    }
    return e.value;
  }

  async claimIdempotency(items: IdempotencyClaim[], ttlMs: number): Promise<string[]> {
    return items.map(({ configId, key: k, webhookId }) => {
      const key = keys.idempotency(configId, k);
      const held = this.live(this.idem, key);
      if (held) return held;
      this.idem.set(key, { value: webhookId, expiresAt: this.clock.now() + ttlMs });
      return webhookId;
    });
  }

  async releaseIdempotency(items: IdempotencyClaim[]): Promise<void> {
    for (const { configId, key: k, webhookId } of items) {
      const key = keys.idempotency(configId, k);
      if (this.live(this.idem, key) === webhookId) this.idem.delete(key);
    }
  }

  async commitIdempotency(items: (IdempotencyClaim & { from: string })[], ttlMs: number): Promise<void> {
    for (const { configId, key: k, webhookId, from } of items) {
      const key = keys.idempotency(configId, k);
      if (this.live(this.idem, key) === from) this.idem.set(key, { value: webhookId, expiresAt: this.clock.now() + ttlMs });
    }
  }

  async apply(batch: HotBatch): Promise<void> {
    const now = this.clock.now();
    for (const w of batch.statuses ?? []) {
      const id = w.status.webhook_id;
      const cur = this.live(this.statuses, id);
      const history = cur?.history ?? [];
      if (w.attempt) {
        history.push(w.attempt);
        if (history.length > HISTORY_LIMIT) history.splice(0, history.length - HISTORY_LIMIT);
      }
      const newer = !cur || newerStamp(w.status.updated_at_ns, cur.status.updated_at_ns);
      const next = (newer ? (w.patch && cur ? { ...cur.status, ...w.status } : w.status) : cur.status) as WebhookStatus;
      this.statuses.set(id, { value: { status: next, history }, expiresAt: now + this.ttls.status_ttl });
      this.track(next);
    }
    for (const r of batch.retries ?? []) {
      // A copy of a pass made already never takes the place of a later pass's retry (addRetry-4.lua).
      const old = this.retries.get(r.id);
      if (old && old.expiresAt > now && passOfRetry(old.data) > passOfRetry(r.data)) continue;
      this.retries.set(r.id, { dueAt: r.dueAt, data: r.data, expiresAt: now + this.ttls.retry_data_ttl });
    }
    for (const id of batch.ended ?? []) this.retries.delete(id);
    if (batch.stats) {
      this.timelines.add(batch.stats, now);
      const bucket = hourBucket(batch.stats.at);
      for (const [name, n] of Object.entries(batch.stats.counts)) {
        if (!n) continue;
        const k = `${name}:${bucket}`;
        this.counters.set(k, { value: (this.live(this.counters, k) ?? 0) + n, expiresAt: now + this.ttls.stats_ttl });
      }
      if (batch.stats.endpoints?.length) {
        const set = this.live(this.endpoints, bucket) ?? new Set<string>();
        for (const e of batch.stats.endpoints) set.add(e);
        this.endpoints.set(bucket, { value: set, expiresAt: now + this.ttls.stats_ttl });
      }
    }
  }

  private track(st: Partial<WebhookStatus>): void {
    if (typeof st.config_id !== 'string' || !st.state || !st.webhook_id) return;
    let set = this.outstanding.get(st.config_id);
    if (TERMINAL_STATES.has(st.state)) {
      set?.delete(st.webhook_id);
      if (set && !set.size) this.outstanding.delete(st.config_id);
      return;
    }
    if (!set) this.outstanding.set(st.config_id, (set = new Set()));
    set.add(st.webhook_id);
  }

  async countOutstanding(configId: string): Promise<number> {
    return this.outstanding.get(configId)?.size ?? 0;
  }

  async getStatus(id: string) {
    const s = this.live(this.statuses, id);
    return s ? { ...s.status, history: [...s.history] } : null;
  }

  async claimDueRetries(now: number, limit: number, leaseMs: number, shards?: readonly number[]): Promise<RetryEntry[]> {
    return claimRetries(this.retries, this.retryShards, now, limit, leaseMs, shards ?? allShards(this.retryShards), this.passes++, this.turns);
  }

  async holdShards(owner: string, now: number, leaseMs: number): Promise<number[]> {
    return this.shardLeases.hold(owner, now, leaseMs);
  }

  async releaseShards(owner: string): Promise<void> {
    this.shardLeases.release(owner);
  }

  /** Memory never had a schedule before the shards. */
  async drainLegacyRetries(): Promise<number> {
    return 0;
  }

  async renewLeases(items: { id: string; from: number; to: number }[]): Promise<number> {
    let n = 0;
    for (const { id, from, to } of items) {
      const r = this.retries.get(id);
      if (r && r.dueAt === from) {
        r.dueAt = to;
        n++;
      }
    }
    return n;
  }

  async ackRetries(items: { id: string; leaseDueAt: number }[]): Promise<void> {
    for (const { id, leaseDueAt } of items) if (this.retries.get(id)?.dueAt === leaseDueAt) this.retries.delete(id);
  }

  async retryCount(): Promise<number> {
    const now = this.clock.now();
    for (const [id, r] of this.retries) if (r.expiresAt <= now) this.retries.delete(id);
    return this.retries.size;
  }

  async stats(now: number, hours: number): Promise<StatsWindow> {
    const out = Object.fromEntries(STAT_NAMES.map((n) => [n, 0])) as StatsWindow;
    const seen = new Set<string>();
    for (let h = 0; h < hours; h++) {
      const bucket = hourBucket(now - h * 3_600_000);
      for (const n of STAT_NAMES) out[n] += this.live(this.counters, `${n}:${bucket}`) ?? 0;
      for (const e of this.live(this.endpoints, bucket) ?? []) seen.add(e);
    }
    out.unique_endpoints = seen.size;
    return out;
  }

  async timeline(now: number, window: TimelineWindow) {
    return this.timelines.read(now, window);
  }

  private sweeper: ReturnType<typeof expirySweeper> | undefined;

  /** Drops expired entries, looking at no more than `budget` of them (core/memory/sweep.ts); returns how many went. */
  sweep(budget: number): number {
    const at = <T extends { expiresAt: number }>(e: T) => e.expiresAt;
    this.sweeper ??= expirySweeper([
      { map: this.idem, expiresAt: at },
      { map: this.statuses, expiresAt: at },
      { map: this.retries, expiresAt: at },
      { map: this.counters, expiresAt: at },
      { map: this.endpoints, expiresAt: at },
      this.recovery.deadLetterTable(),
    ]);
    return this.sweeper(this.clock.now(), budget);
  }

  /** Entries held, expired ones not yet dropped included. */
  sizes(): Record<'idempotency' | 'statuses' | 'retries' | 'counters' | 'endpoints' | 'dead_letters', number> {
    return {
      idempotency: this.idem.size,
      statuses: this.statuses.size,
      retries: this.retries.size,
      counters: this.counters.size,
      endpoints: this.endpoints.size,
      dead_letters: this.recovery.deadLetterTable().map.size,
    };
  }

  async ping(): Promise<void> {}
  async close(): Promise<void> {}

  // Recovery and listing: core/memory/recovery.ts, over this class's status and retry maps.
  private rec: MemoryRecovery | undefined;
  private get recovery(): MemoryRecovery {
    const tables: MemoryTables = {
      status: (id) => this.live(this.statuses, id)?.status,
      putStatus: (st) => {
        const history = this.live(this.statuses, st.webhook_id)?.history ?? [];
        this.statuses.set(st.webhook_id, { value: { status: st, history }, expiresAt: this.clock.now() + this.ttls.status_ttl });
        this.track(st);
      },
      statuses: () => [...this.statuses.keys()].flatMap((id) => this.live(this.statuses, id)?.status ?? []),
      hasRetry: (id) => (this.retries.get(id)?.expiresAt ?? 0) > this.clock.now(),
      putRetry: (r) => void this.retries.set(r.id, { dueAt: r.dueAt, data: r.data, expiresAt: this.clock.now() + this.ttls.retry_data_ttl }),
    };
    return (this.rec ??= new MemoryRecovery(tables, this.ttls, this.clock));
  }
  restore: HotState['restore'] = (items) => this.recovery.restore(items);
  unscheduled: HotState['unscheduled'] = (items) => this.recovery.unscheduled(items);
  reschedule: HotState['reschedule'] = (items) => this.recovery.reschedule(items);
  listWebhooks: HotState['listWebhooks'] = (q) => this.recovery.listWebhooks(q);
  putDeadLetters: HotState['putDeadLetters'] = (items) => this.recovery.putDeadLetters(items);
  getDeadLetter: HotState['getDeadLetter'] = (id) => this.recovery.getDeadLetter(id);
  listDeadLetters: HotState['listDeadLetters'] = (q) => this.recovery.listDeadLetters(q);
  isInitialized: HotState['isInitialized'] = () => this.recovery.isInitialized();
  markInitialized: HotState['markInitialized'] = (note) => this.recovery.markInitialized(note);
  acquireLock: HotState['acquireLock'] = (owner, ttlMs) => this.recovery.acquireLock(owner, ttlMs);
  renewLock: HotState['renewLock'] = (owner, ttlMs) => this.recovery.renewLock(owner, ttlMs);
  releaseLock: HotState['releaseLock'] = (owner) => this.recovery.releaseLock(owner);
}
