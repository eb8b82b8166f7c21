import type { RedisKeys } from '../../core/domain/keys';
import type { WebhookStatus } from '../../core/domain/status';
import type { HotTtls, StatusWrite } from '../../core/ports/hot-state';
import type { DeadLetterEntry, DeadLetterQuery, Page, RestoreItem, WebhookQuery } from '../../core/ports/recovery';
import { deadLetterFloor, deadLetterMember, idFloor, scanPage, webhookIdOfMember, type Candidate } from '../../core/reconcile/listing';
import { call, execPipeline } from './exec';
import type { ScriptedClient, ScriptedPipeline } from './scripts';
import type { RedisRetrySchedule } from './retry-schedule';
import { pipe } from './slots';

// The recovery and listing half of RedisHotState (workers/redis/hot-state.ts delegates
// here). Listing indexes are lexicographic zsets (every score 0): webhook ids are ULIDs, and
// dead-letter members start with their 13-digit dead_at, so member order is time order and
// a cursor is simply the last member returned. Index entries older than their TTL are
// trimmed whenever an index is written. On a Redis Cluster a config's indexes and a webhook's
// status are two slots: the index entries follow the status writes in calls of their own
// (indexWebhook-3.lua), the dead-letter ones after their hash (docs/ARCHITECTURE.md, "Redis
// Cluster: what stays atomic").

/** Webhooks' config and endpoint, by webhook id. */
export type Owners = Map<string, Pick<WebhookStatus, 'config_id' | 'endpoint_hash'>>;

export class RedisRecovery {
  constructor(
    private readonly redis: ScriptedClient,
    private readonly ttls: HotTtls,
    private readonly k: RedisKeys,
    /** Where a restored retry goes (its webhook's shard). */
    private readonly schedule: RedisRetrySchedule,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * On a cluster: the config and endpoint of the webhooks whose patches move their state without
   * naming them (a held webhook's), read from their stored statuses, so that their index
   * entries (their config's slot) can follow. One round trip, only when there are such patches.
   */
  async ownersOfPatches(statuses: StatusWrite[]): Promise<Owners> {
    const owners: Owners = new Map();
    const ids = [...new Set(statuses.filter((s) => s.patch && s.status.state && typeof s.status.config_id !== 'string').map((s) => s.status.webhook_id))];
    if (!ids.length) return owners;
    const p = pipe(this.redis);
    for (const id of ids) p.hget(this.k.status(id), 'data');
    ((await execPipeline(p)) as (string | null)[]).forEach((data, i) => {
      const s = data ? (JSON.parse(data) as Partial<WebhookStatus>) : null;
      if (typeof s?.config_id === 'string' && typeof s.endpoint_hash === 'string') owners.set(ids[i]!, { config_id: s.config_id, endpoint_hash: s.endpoint_hash });
    });
    return owners;
  }

  /**
   * On a cluster: queues the call that brings a written status's index entries in step (its
   * config's slot). A status that names no config, endpoint or state (a patch of a held
   * webhook) leaves them as they are.
   */
  indexApart(p: ScriptedPipeline, s: Partial<WebhookStatus>): void {
    if (typeof s.config_id !== 'string' || typeof s.endpoint_hash !== 'string' || typeof s.state !== 'string' || !s.state || typeof s.webhook_id !== 'string') return;
    const k = this.k;
    const c = s.config_id;
    p.howk_indexWebhook(
      k.webhookIndex(c),
      k.webhookEndpointIndex(c, s.endpoint_hash),
      k.webhookIndexRecord(c),
      s.webhook_id,
      s.updated_at_ns ?? '0',
      s.state,
      k.webhookStateIndex(c, ''),
      this.indexFloor(),
      this.ttls.status_ttl,
    );
  }

  private deadLetterTtl(): number {
    return this.ttls.deadletter_ttl ?? this.ttls.status_ttl;
  }

  /** Index keys (config, endpoint) and state-index prefix of a status; '' where a patch of a held webhook names no config (the script then uses the stored prefix). */
  indexTargets(s: Partial<WebhookStatus>): { configIndex: string; endpointIndex: string; prefix: string } {
    const known = typeof s.config_id === 'string' && typeof s.endpoint_hash === 'string';
    const keys = this.k;
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
    p.howk_indexStatus(this.k.status(id), t.configIndex, t.endpointIndex, id, t.prefix, this.indexFloor());
  }

  async restore(items: RestoreItem[]): Promise<number> {
    if (!items.length) return 0;
    if (this.redis.isCluster) return this.restoreApart(items);
    const p = pipe(this.redis);
    const { status_ttl, retry_data_ttl } = this.ttls;
    const keys = this.k;
    for (const { status, retry } of items) {
      const id = status.webhook_id;
      const r = this.schedule.restoreArgs(id, retry?.dueAt ?? 0, retry?.data ?? '', retry_data_ttl);
      p.howk_restoreState(
        keys.status(id),
        ...r.keys,
        JSON.stringify(status),
        status.updated_at_ns,
        status_ttl,
        id,
        retry ? retry.dueAt : '',
        retry?.data ?? '',
        retry_data_ttl,
        r.args[4]!,
      );
      this.indexStatus(p, status);
    }
    const replies = await execPipeline(p);
    return replies.filter((r, i) => i % 2 === 0 && r === 1).length;
  }

  /** On a cluster: the statuses (each its webhook's slot), then the retries of those written (the schedule's slot). */
  private async restoreApart(items: RestoreItem[]): Promise<number> {
    const { status_ttl, retry_data_ttl } = this.ttls;
    const p = pipe(this.redis);
    for (const { status } of items) p.howk_restoreStatus(this.k.status(status.webhook_id), JSON.stringify(status), status.updated_at_ns, status_ttl);
    // The index calls after the statuses' (replies past items.length): each orders itself by stamp.
    for (const { status } of items) this.indexApart(p, status);
    const written = (await execPipeline(p)).slice(0, items.length).map((r) => r === 1);
    const r = pipe(this.redis);
    items.forEach(({ status, retry }, i) => {
      if (!written[i] || !retry) return;
      const a = this.schedule.restoreArgs(status.webhook_id, retry.dueAt, retry.data, retry_data_ttl);
      r.howk_restoreRetry(...a.keys, ...a.args);
    });
    if (r.length) await execPipeline(r);
    return written.filter(Boolean).length;
  }

  async listWebhooks(q: WebhookQuery): Promise<Page<WebhookStatus>> {
    const keys = this.k;
    // The narrowest index that holds the answer; the other filter is applied to the statuses.
    const index = q.state ? keys.webhookStateIndex(q.configId, q.state) : q.endpointHash ? keys.webhookEndpointIndex(q.configId, q.endpointHash) : keys.webhookIndex(q.configId);
    const fetch = async (after: string | undefined, n: number): Promise<Candidate<WebhookStatus>[]> => {
      const ids = (await call(() => this.redis.zrange(index, after ? `(${after}` : '+', '-', 'BYLEX', 'REV', 'LIMIT', 0, n))) as string[];
      if (!ids.length) return [];
      const p = pipe(this.redis);
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
    if (this.redis.isCluster) return this.putDeadLettersApart(items, ttl, floor);
    const keys = this.k;
    const p = pipe(this.redis);
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

  /** On a cluster: the hashes (each its webhook's slot), then the index entries of those stored (their config's slot). */
  private async putDeadLettersApart(items: DeadLetterEntry[], ttl: number, floor: string): Promise<void> {
    const keys = this.k;
    const p = pipe(this.redis);
    for (const e of items)
      p.howk_storeDeadLetter(
        keys.deadLetter(e.webhookId),
        deadLetterMember(e.deadAtMs, e.webhookId),
        e.record,
        e.deadAtMs,
        ttl,
        keys.deadLetterReasonIndex(e.configId, e.reasonType),
      );
    const prev = (await execPipeline(p)) as ([string, string] | 0)[];
    const ix = pipe(this.redis);
    items.forEach((e, i) => {
      const was = prev[i];
      if (was === 0 || was === undefined) return;
      ix.howk_indexDeadLetter(
        keys.deadLetterIndex(e.configId),
        keys.deadLetterReasonIndex(e.configId, e.reasonType),
        deadLetterMember(e.deadAtMs, e.webhookId),
        floor,
        was[0],
        was[1],
      );
    });
    if (ix.length) await execPipeline(ix);
  }

  async getDeadLetter(webhookId: string): Promise<string | null> {
    return call(() => this.redis.hget(this.k.deadLetter(webhookId), 'data'));
  }

  async listDeadLetters(q: DeadLetterQuery): Promise<Page<string>> {
    const keys = this.k;
    const index = q.reasonType ? keys.deadLetterReasonIndex(q.configId, q.reasonType) : keys.deadLetterIndex(q.configId);
    const start = deadLetterFloor(Math.max(q.since ?? 0, this.now() - this.deadLetterTtl()));
    const fetch = async (after: string | undefined, n: number): Promise<Candidate<string>[]> => {
      const members = (await call(() => this.redis.zrange(index, after ? `(${after}` : `[${start}`, '+', 'BYLEX', 'LIMIT', 0, n))) as string[];
      if (!members.length) return [];
      const p = pipe(this.redis);
      for (const m of members) p.hmget(keys.deadLetter(webhookIdOfMember(m)), 'data', 'member');
      const rows = (await execPipeline(p)) as [string | null, string | null][];
      // An entry whose webhook died again since has moved on: it is listed at its new place.
      return members.map((m, i) => ({ key: m, item: rows[i]![1] === m ? rows[i]![0] : null }));
    };
    return scanPage(q, fetch, () => true);
  }

  async isInitialized(): Promise<boolean> {
    return (await call(() => this.redis.exists(this.k.canary()))) === 1;
  }

  async markInitialized(note: string): Promise<void> {
    await call(() => this.redis.set(this.k.canary(), note));
  }

  async acquireLock(owner: string, ttlMs: number): Promise<boolean> {
    return (await call(() => this.redis.set(this.k.reconcilerLock(), owner, 'PX', ttlMs, 'NX'))) === 'OK';
  }

  async renewLock(owner: string, ttlMs: number): Promise<boolean> {
    return (await call(() => this.redis.howk_renewLock(this.k.reconcilerLock(), owner, ttlMs))) === 1;
  }

  async releaseLock(owner: string): Promise<void> {
    await call(() => this.redis.howk_releaseLock(this.k.reconcilerLock(), owner));
  }
}
