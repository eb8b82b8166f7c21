import { keys } from '../../core/domain/keys';
import type { WebhookStatus } from '../../core/domain/status';
import type { HotTtls } from '../../core/ports/hot-state';
import type { DeadLetterEntry, DeadLetterQuery, Page, RestoreItem, WebhookQuery } from '../../core/ports/recovery';
import { deadLetterFloor, deadLetterMember, idFloor, scanPage, webhookIdOfMember, type Candidate } from '../../core/reconcile/listing';
import { call, execPipeline } from './exec';
import { scriptedPipeline, type ScriptedClient, type ScriptedPipeline } from './scripts';

// The recovery and listing half of RedisHotState (workers/redis/hot-state.ts delegates
// here). Listing indexes are lexicographic zsets (every score 0): webhook ids are ULIDs, and
// dead-letter members start with their 13-digit dead_at, so member order is time order and
// a cursor is simply the last member returned. Index entries older than their TTL are
// trimmed whenever an index is written.

export class RedisRecovery {
  constructor(
    private readonly redis: ScriptedClient,
    private readonly ttls: HotTtls,
    private readonly now: () => number = Date.now,
  ) {}

  private deadLetterTtl(): number {
    return this.ttls.deadletter_ttl ?? this.ttls.status_ttl;
  }

  /** Index keys (config, endpoint) and state-index prefix of a status; '' where a patch of a held webhook names no config (the script then uses the stored prefix). */
  indexTargets(s: Partial<WebhookStatus>): { configIndex: string; endpointIndex: string; prefix: string } {
    const known = typeof s.config_id === 'string' && typeof s.endpoint_hash === 'string';
    return known
      ? { configIndex: keys.webhookIndex(s.config_id!), endpointIndex: keys.webhookEndpointIndex(s.config_id!, s.endpoint_hash!), prefix: keys.webhookStateIndex(s.config_id!, '') }
      : { configIndex: '', endpointIndex: '', prefix: '' };
  }

  /** Index entries older than this are trimmed whenever an index is written. */
  indexFloor(): string {
    return idFloor(this.now() - this.ttls.status_ttl);
  }

  /** Queues, on the pipeline that writes a status, the script that brings its index entries in step. */
  indexStatus(p: ScriptedPipeline, s: Partial<WebhookStatus> & Pick<WebhookStatus, 'webhook_id'>): void {
    const id = s.webhook_id;
    const t = this.indexTargets(s);
    p.howk_indexStatus(keys.status(id), t.configIndex, t.endpointIndex, id, t.prefix, this.indexFloor());
  }

  async restore(items: RestoreItem[]): Promise<number> {
    if (!items.length) return 0;
    const p = scriptedPipeline(this.redis);
    const { status_ttl, retry_data_ttl } = this.ttls;
    for (const { status, retry } of items) {
      const id = status.webhook_id;
      p.howk_restoreState(
        keys.status(id),
        keys.retries(),
        keys.retryData(id),
        JSON.stringify(status),
        status.updated_at_ns,
        status_ttl,
        id,
        retry ? retry.dueAt : '',
        retry?.data ?? '',
        retry_data_ttl,
      );
      this.indexStatus(p, status);
    }
    const replies = await execPipeline(p);
    return replies.filter((r, i) => i % 2 === 0 && r === 1).length;
  }

  async listWebhooks(q: WebhookQuery): Promise<Page<WebhookStatus>> {
    // The narrowest index that holds the answer; the other filter is applied to the statuses.
    const index = q.state ? keys.webhookStateIndex(q.configId, q.state) : q.endpointHash ? keys.webhookEndpointIndex(q.configId, q.endpointHash) : keys.webhookIndex(q.configId);
    const fetch = async (after: string | undefined, n: number): Promise<Candidate<WebhookStatus>[]> => {
      const ids = (await call(() => this.redis.zrange(index, after ? `(${after}` : '+', '-', 'BYLEX', 'REV', 'LIMIT', 0, n))) as string[];
      if (!ids.length) return [];
      const p = this.redis.pipeline();
      for (const id of ids) p.hget(keys.status(id), 'data');
      const data = (await execPipeline(p)) as (string | null)[];
      return ids.map((id, i) => ({ key: id, item: data[i] ? (JSON.parse(data[i]!) as WebhookStatus) : null }));
    };
    // The stored status decides: an entry left in an old state's index (its hash expired and
    // came back) or a patch that never named its config is not listed.
    return scanPage(q, fetch, (s) => s.config_id === q.configId && (!q.state || s.state === q.state) && (!q.endpointHash || s.endpoint_hash === q.endpointHash));
  }

  async putDeadLetters(items: DeadLetterEntry[]): Promise<void> {
    if (!items.length) return;
    const ttl = this.deadLetterTtl();
    const floor = deadLetterFloor(this.now() - ttl);
    const p = scriptedPipeline(this.redis);
    for (const e of items) {
      p.howk_putDeadLetter(
        keys.deadLetter(e.webhookId),
        keys.deadLetterIndex(e.configId),
        keys.deadLetterReasonIndex(e.configId, e.reasonType),
        deadLetterMember(e.deadAtMs, e.webhookId),
        e.record,
        e.deadAtMs,
        ttl,
        floor,
      );
    }
    await execPipeline(p);
  }

  async getDeadLetter(webhookId: string): Promise<string | null> {
    return call(() => this.redis.hget(keys.deadLetter(webhookId), 'data'));
  }

  async listDeadLetters(q: DeadLetterQuery): Promise<Page<string>> {
    const index = q.reasonType ? keys.deadLetterReasonIndex(q.configId, q.reasonType) : keys.deadLetterIndex(q.configId);
    const start = deadLetterFloor(Math.max(q.since ?? 0, this.now() - this.deadLetterTtl()));
    const fetch = async (after: string | undefined, n: number): Promise<Candidate<string>[]> => {
      const members = (await call(() => this.redis.zrange(index, after ? `(${after}` : `[${start}`, '+', 'BYLEX', 'LIMIT', 0, n))) as string[];
      if (!members.length) return [];
      const p = this.redis.pipeline();
      for (const m of members) p.hmget(keys.deadLetter(webhookIdOfMember(m)), 'data', 'member');
      const rows = (await execPipeline(p)) as [string | null, string | null][];
      // An entry whose webhook died again since has moved on: it is listed at its new place.
      return members.map((m, i) => ({ key: m, item: rows[i]![1] === m ? rows[i]![0] : null }));
    };
    return scanPage(q, fetch, () => true);
  }

  async isInitialized(): Promise<boolean> {
    return (await call(() => this.redis.exists(keys.canary()))) === 1;
  }

  async markInitialized(note: string): Promise<void> {
    await call(() => this.redis.set(keys.canary(), note));
  }

  async acquireLock(owner: string, ttlMs: number): Promise<boolean> {
    return (await call(() => this.redis.set(keys.reconcilerLock(), owner, 'PX', ttlMs, 'NX'))) === 'OK';
  }

  async renewLock(owner: string, ttlMs: number): Promise<boolean> {
    return (await call(() => this.redis.howk_renewLock(keys.reconcilerLock(), owner, ttlMs))) === 1;
  }

  async releaseLock(owner: string): Promise<void> {
    await call(() => this.redis.howk_releaseLock(keys.reconcilerLock(), owner));
  }
}
