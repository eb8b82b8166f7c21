import type { WebhookStatus } from '../domain/status';
import type { Clock } from '../ports/clock';
import type { HotTtls, RetryEntry } from '../ports/hot-state';
import type { DeadLetterEntry, DeadLetterQuery, Page, RestoreItem, WebhookQuery } from '../ports/recovery';
import { compareStamps } from '../records/state';
import { deadLetterFloor, deadLetterMember, scanPage, type Candidate } from '../reconcile/listing';
import type { SweptMap } from './sweep';

// The recovery and listing half of MemoryHotState (core/memory/hot-state.ts delegates
// here): same semantics as workers/redis/recovery.ts, held by the test-shared contract
// (test/contract/hot-state.contract-rebuild.ts, -listing.ts, -deadletters.ts).

/** What this half needs of the status and retry maps it shares with MemoryHotState. */
export type MemoryTables = {
  status(id: string): WebhookStatus | undefined;
  /** Replaces a status (history kept), refreshing its TTL. */
  putStatus(s: WebhookStatus): void;
  statuses(): Iterable<WebhookStatus>;
  hasRetry(id: string): boolean;
  putRetry(r: RetryEntry): void;
};

type StoredDeadLetter = { entry: DeadLetterEntry; member: string; expiresAt: number };

export class MemoryRecovery {
  private deadLetters = new Map<string, StoredDeadLetter>();
  private canary: string | null = null;
  private lock: { owner: string; expiresAt: number } | null = null;

  constructor(
    private readonly t: MemoryTables,
    private readonly ttls: HotTtls,
    private readonly clock: Clock,
  ) {}

  async restore(items: RestoreItem[]): Promise<number> {
    let written = 0;
    for (const { status, retry } of items) {
      const cur = this.t.status(status.webhook_id);
      if (cur && compareStamps(status.updated_at_ns, cur.updated_at_ns) <= 0) continue;
      this.t.putStatus(status);
      if (retry && !this.t.hasRetry(retry.id)) this.t.putRetry(retry);
      written++;
    }
    return written;
  }

  /**
   * The orphan sweep's look (core/reconcile/orphans.ts): webhooks with no retry row (a lease is
   * one). In-flight records are howk-dev's guards', not this store's: the sweep's grace, longer
   * than any attempt, covers a delivery in flight.
   */
  async unscheduled(items: { id: string }[]): Promise<Map<string, WebhookStatus | null>> {
    return new Map(items.filter(({ id }) => !this.t.hasRetry(id)).map(({ id }) => [id, this.t.status(id) ?? null]));
  }

  /** The status where none as new is stored, then the retry unless one is scheduled. */
  async reschedule(items: RestoreItem[]): Promise<string[]> {
    const done: string[] = [];
    for (const { status, retry } of items) {
      const cur = this.t.status(status.webhook_id);
      if (!cur || compareStamps(status.updated_at_ns, cur.updated_at_ns) > 0) this.t.putStatus(status);
      if (!retry || this.t.hasRetry(retry.id)) continue;
      this.t.putRetry(retry);
      done.push(retry.id);
    }
    return done;
  }

  async listWebhooks(q: WebhookQuery): Promise<Page<WebhookStatus>> {
    // The in-memory "index": this config's live statuses, newest id first.
    const sorted = [...this.t.statuses()].filter((s) => s.config_id === q.configId).sort((a, b) => (a.webhook_id < b.webhook_id ? 1 : -1));
    const fetch = async (after: string | undefined, n: number): Promise<Candidate<WebhookStatus>[]> =>
      sorted
        .filter((s) => after === undefined || s.webhook_id < after)
        .slice(0, n)
        .map((s) => ({ key: s.webhook_id, item: s }));
    return scanPage(q, fetch, (s) => (!q.state || s.state === q.state) && (!q.endpointHash || s.endpoint_hash === q.endpointHash));
  }

  async putDeadLetters(items: DeadLetterEntry[]): Promise<void> {
    const now = this.clock.now();
    for (const e of items) {
      const cur = this.liveDeadLetter(e.webhookId);
      if (cur && cur.entry.deadAtMs >= e.deadAtMs) continue;
      this.deadLetters.set(e.webhookId, { entry: e, member: deadLetterMember(e.deadAtMs, e.webhookId), expiresAt: now + this.dlTtl() });
    }
  }

  async getDeadLetter(webhookId: string): Promise<string | null> {
    return this.liveDeadLetter(webhookId)?.entry.record ?? null;
  }

  async listDeadLetters(q: DeadLetterQuery): Promise<Page<string>> {
    const floor = deadLetterFloor(this.clock.now() - this.dlTtl());
    const sorted = [...this.deadLetters.values()]
      .filter((d) => d.expiresAt > this.clock.now() && d.member >= floor && d.entry.configId === q.configId && (!q.reasonType || d.entry.reasonType === q.reasonType))
      .sort((a, b) => (a.member < b.member ? -1 : 1));
    const since = q.since !== undefined ? deadLetterFloor(q.since) : '';
    const fetch = async (after: string | undefined, n: number): Promise<Candidate<string>[]> =>
      sorted
        .filter((d) => (after === undefined ? d.member >= since : d.member > after))
        .slice(0, n)
        .map((d) => ({ key: d.member, item: d.entry.record }));
    return scanPage(q, fetch, () => true);
  }

  async isInitialized(): Promise<boolean> {
    return this.canary !== null;
  }

  async markInitialized(note: string): Promise<void> {
    this.canary = note;
  }

  async acquireLock(owner: string, ttlMs: number): Promise<boolean> {
    const now = this.clock.now();
    if (this.lock && this.lock.expiresAt > now) return false;
    this.lock = { owner, expiresAt: now + ttlMs };
    return true;
  }

  async renewLock(owner: string, ttlMs: number): Promise<boolean> {
    const now = this.clock.now();
    if (!this.lock || this.lock.owner !== owner || this.lock.expiresAt <= now) return false;
    this.lock.expiresAt = now + ttlMs;
    return true;
  }

  async releaseLock(owner: string): Promise<void> {
    if (this.lock?.owner === owner) this.lock = null;
  }

  /** The dead letters, for MemoryHotState's sweep. */
  deadLetterTable(): SweptMap<StoredDeadLetter> {
    return { map: this.deadLetters, expiresAt: (d) => d.expiresAt };
  }

  private dlTtl(): number {
    return this.ttls.deadletter_ttl ?? this.ttls.status_ttl;
  }

  private liveDeadLetter(id: string): StoredDeadLetter | undefined {
    const d = this.deadLetters.get(id);
    if (d && d.expiresAt <= this.clock.now()) {
      this.deadLetters.delete(id);
      return undefined;
    }
    return d;
  }
}
