import type { Command, Redis } from 'ioredis';
import { clusterKeys, keys, scriptPrefix, type RedisKeys } from '../../core/domain/keys';
import { HISTORY_LIMIT, OUTSTANDING_STATES, type WebhookStatus, type WebhookStatusView } from '../../core/domain/status';
import { HISTORY_FIELD, historyOf } from '../../core/domain/status-history';
import { hourBucket } from '../../core/domain/time';
import { TIMELINE, TIMELINE_WINDOWS, bucketStart, bucketTtlMs, timelineOf, timelineStarts, type Timeline, type TimelineWindow } from '../../core/domain/timeline';
import { STAT_NAMES, type HotBatch, type HotState, type HotTtls, type IdempotencyClaim, type StatsWindow, type StatusWrite } from '../../core/ports/hot-state';
import { call, execPipeline } from './exec';
import { commitIdempotency } from './idempotency';
import { RedisOrphans } from './orphans';
import { RedisRecovery, type Owners } from './recovery';
import { RespArgs } from './resp';
import { batchScript, scriptCommand } from './script-call';
import { BATCH_SCRIPTS, forCluster, withScripts, type ScriptedClient, type ScriptedPipeline } from './scripts';
import { groupBySlot, pipe } from './slots';
import { NO_TARGETS, statusArgs } from './status-args';
import { RedisShardLeases } from './retry-leases';
import { RedisRetrySchedule } from './retry-schedule';
import { DEFAULT_RETRY_SHARDS } from '../../core/domain/retry-shards';
import { mergeStats } from './stats-merge';
import { createBatcher } from '../../core/domain/batcher';

// HotState on Redis (keys: core/domain/keys.ts), one round trip per method, held to core/memory/hot-state.ts's semantics by test/contract/hot-state.contract.ts.

const HOUR_MS = 3_600_000;
/** Most statuses one merged apply carries (one batch alone may carry more). */
const MAX_MERGED_STATUSES = 1000;
const WRITE_STATUSES = batchScript(BATCH_SCRIPTS.writeStatuses);
const CLUSTER_WRITE_STATUSES = batchScript(forCluster(BATCH_SCRIPTS.writeStatuses));

/** An ioredis pipeline takes a Command as it comes (ChainableCommander's type does not show it). */
type PipelineOf = { sendCommand(c: Command): unknown };

export class RedisHotState implements HotState {
  private readonly redis: ScriptedClient;
  /** The key layout: clusterKeys on a Redis Cluster (docs/ARCHITECTURE.md, "Redis Cluster: what stays atomic"). */
  private readonly k: RedisKeys;
  private readonly sched: RedisRetrySchedule;
  private readonly leases: RedisShardLeases;
  readonly retryShards: number;

  constructor(
    redis: Redis,
    private readonly ttls: HotTtls,
    /** Another key layout than the client's (tests sharing a cluster give each theirs: keys.ts, namespaced). */
    layout?: RedisKeys,
  ) {
    this.redis = withScripts(redis);
    this.k = layout ?? (redis.isCluster ? clusterKeys : keys);
    this.retryShards = ttls.retry_shards ?? DEFAULT_RETRY_SHARDS;
    this.sched = new RedisRetrySchedule(this.redis, this.k, this.retryShards);
    this.leases = new RedisShardLeases(this.redis, this.k, this.sched);
  }

  async claimIdempotency(items: IdempotencyClaim[], ttlMs: number): Promise<string[]> {
    if (!items.length) return [];
    const p = pipe(this.redis);
    for (const { configId, key, webhookId } of items) p.howk_claimIdempotency(this.k.idempotency(configId, key), this.k.legacyIdempotency(configId, key), webhookId, ttlMs);
    const prev = await execPipeline(p);
    return items.map((item, i) => (prev[i] as string | null) ?? item.webhookId);
  }

  commitIdempotency = (items: (IdempotencyClaim & { from: string })[], ttlMs: number) => commitIdempotency(this.redis, this.k, items, ttlMs);
  async releaseIdempotency(items: IdempotencyClaim[]): Promise<void> {
    if (!items.length) return;
    const p = pipe(this.redis);
    for (const { configId, key, webhookId } of items) p.howk_releaseIdempotency(this.k.idempotency(configId, key), webhookId);
    await execPipeline(p);
  }

  /**
   * Writes arriving while an apply is in flight wait for it, then leave together: one
   * pipeline with one writeStatuses.lua call for all their statuses. With pipelined
   * consumption a worker writes many small batches at once, and each round trip and script
   * call costs the worker and Redis more than the statuses it carries. An idle writer sends
   * once the current event-loop turn is over: the batches whose outcomes one Kafka produce
   * acknowledged (worker.outcome_linger) all apply in that turn, and leave in one round trip
   * instead of the first alone and the rest after it. Each caller resolves when the round
   * trip that carried its batch succeeded.
   */
  apply(batch: HotBatch): Promise<void> {
    return this.applies.add(batch).then(({ result, index }) => {
      if (result[index] !== undefined) throw result[index];
    });
  }

  /** Each batch's error, if any (undefined: written). */
  private readonly applies = createBatcher<HotBatch, unknown[]>({
    start: { defer: setImmediate },
    maxWeight: MAX_MERGED_STATUSES,
    weight: (b) => b.statuses?.length ?? 0,
    run: async (taken) => {
      try {
        await this.write(taken);
        return [];
      } catch (e) {
        // An error reply (a defect in one batch) must not fail the batches that only shared
        // its round trip: each is written again on its own. Redis away fails them all.
        if (taken.length === 1 || !(e instanceof Error && e.name === 'ReplyError')) throw e;
        return Promise.all(
          taken.map((b) =>
            this.write([b]).then(
              () => undefined,
              (err: unknown) => err ?? new Error('status write failed'),
            ),
          ),
        );
      }
    },
  });

  /** Batches in the order given: all statuses in one script call (LWW: order-free), then each batch's retries and ended, then their stats per minute. */
  private async write(batches: HotBatch[]): Promise<void> {
    const p = pipe(this.redis);
    const { retry_data_ttl, stats_ttl } = this.ttls;
    const statuses = batches.flatMap((b) => b.statuses ?? []);
    // Encoded by hand (workers/redis/resp.ts: the bytes ioredis would send), first in the pipeline as before.
    if (statuses.length) this.writeStatuses(p as unknown as PipelineOf, statuses, this.redis.isCluster ? await this.recovery.ownersOfPatches(statuses) : undefined);
    // The ended of consecutive batches go together (one ZREM and one DEL per shard for them
    // all, not per batch), still before any later batch's retries: the order stays the batches'.
    let ended: string[] = [];
    for (const batch of batches) {
      if (batch.retries?.length && ended.length) {
        this.sched.end(p, ended);
        ended = [];
      }
      // One script call each (addRetry-4.lua): data and entry together, and never over a later pass.
      for (const r of batch.retries ?? []) this.sched.add(p, r, retry_data_ttl);
      if (batch.ended?.length) ended = ended.length ? ended.concat(batch.ended) : batch.ended;
    }
    if (ended.length) this.sched.end(p, ended);
    for (const stats of mergeStats(batches)) this.addStats(p, stats, stats_ttl);
    if (p.length) await execPipeline(p);
  }

  /** The statuses' writeStatuses.lua call; on a cluster one per slot of their webhooks, without index targets, and their index calls. */
  private writeStatuses(p: PipelineOf, statuses: StatusWrite[], owners?: Owners): void {
    const floor = this.recovery.indexFloor();
    if (!this.redis.isCluster) {
      this.statusHead ??= new RespArgs().str(this.k.status('')).str(this.k.statusHistory('')).num(this.ttls.status_ttl).num(HISTORY_LIMIT);
      p.sendCommand(
        scriptCommand(
          this.redis,
          WRITE_STATUSES,
          statusArgs(statuses, this.statusHead, floor, (s) => this.recovery.indexTargets(s)),
        ),
      );
      return;
    }
    // Prefixes ending in '{': the script closes each key with '}' (the id is its hash tag).
    this.statusHead ??= new RespArgs()
      .str(`${scriptPrefix(this.k.status(''))}{`)
      .str(`${scriptPrefix(this.k.statusHistory(''))}{`)
      .num(this.ttls.status_ttl)
      .num(HISTORY_LIMIT);
    for (const group of groupBySlot(statuses, (s) => this.k.status(s.status.webhook_id)))
      p.sendCommand(scriptCommand(this.redis, CLUSTER_WRITE_STATUSES, statusArgs(group, this.statusHead, floor, NO_TARGETS), this.k.status(group[0]!.status.webhook_id)));
    // The index entries in their config's slot, in the same round trip (each call orders itself by stamp).
    for (const s of statuses) this.recovery.indexApart(p as unknown as ScriptedPipeline, { ...owners?.get(s.status.webhook_id), ...s.status });
  }

  /** The arguments every call begins with that never change: the key prefixes, the TTL, the history limit. */
  private statusHead: RespArgs | undefined;

  private addStats(p: ScriptedPipeline, stats: NonNullable<HotBatch['stats']>, ttl: number): void {
    const keys = this.k;
    const bucket = hourBucket(stats.at);
    for (const [name, n] of Object.entries(stats.counts)) {
      if (!n) continue;
      const k = keys.stats(name, bucket);
      p.incrby(k, n).pexpire(k, ttl);
    }
    // The timeline: one hash per minute and per quarter hour (field: stat name).
    for (const w of TIMELINE_WINDOWS) {
      const spec = TIMELINE[w];
      const k = keys.timeline(spec.bucketMs / 1000, bucketStart(stats.at, spec.bucketMs));
      let any = false;
      for (const [name, n] of Object.entries(stats.counts)) {
        if (!n) continue;
        p.hincrby(k, name, n);
        any = true;
      }
      if (any) p.pexpire(k, bucketTtlMs(spec));
    }
    if (stats.endpoints?.length) {
      const k = keys.endpointsHll(bucket);
      p.pfadd(k, ...stats.endpoints).pexpire(k, ttl);
    }
  }

  /** The status and its history (core/domain/status-history.ts: the hash's field, and the list of workers not yet upgraded). */
  async getStatus(id: string): Promise<WebhookStatusView | null> {
    const p = pipe(this.redis).hmget(this.k.status(id), 'data', HISTORY_FIELD).lrange(this.k.statusHistory(id), 0, -1);
    const [[data, field], list] = (await execPipeline(p)) as [[string | null, string | null], string[]];
    if (data === null) return null;
    return { ...(JSON.parse(data) as WebhookStatus), history: historyOf(list, field) };
  }

  /** The state indexes writeStatuses.lua keeps, counted from the index floor (entries older than status_ttl are as good as trimmed). */
  async countOutstanding(configId: string): Promise<number> {
    const p = pipe(this.redis);
    const floor = `(${this.recovery.indexFloor()}`;
    for (const state of OUTSTANDING_STATES) p.zlexcount(this.k.webhookStateIndex(configId, state), floor, '+');
    const counts = (await execPipeline(p)) as number[];
    return counts.reduce((a, b) => a + Number(b), 0);
  }

  claimDueRetries: HotState['claimDueRetries'] = (now, limit, leaseMs, shards) => call(() => this.sched.claim(now, limit, leaseMs, shards));
  renewLeases: HotState['renewLeases'] = (items) => call(() => this.sched.renew(items));
  ackRetries: HotState['ackRetries'] = (items) => call(() => this.sched.ack(items));
  retryCount: HotState['retryCount'] = () => call(() => this.sched.count());
  holdShards: HotState['holdShards'] = (owner, now, leaseMs) => call(() => this.leases.hold(owner, now, leaseMs));
  releaseShards: HotState['releaseShards'] = (owner) => call(() => this.leases.release(owner));
  drainLegacyRetries: HotState['drainLegacyRetries'] = (limit) => call(() => this.leases.drainLegacy(limit, this.ttls.retry_data_ttl));

  async stats(now: number, hours: number): Promise<StatsWindow> {
    const out = Object.fromEntries(STAT_NAMES.map((n) => [n, 0])) as StatsWindow;
    out.unique_endpoints = 0;
    if (hours <= 0) return out;
    const buckets = Array.from({ length: hours }, (_, h) => hourBucket(now - h * HOUR_MS));
    const counterKeys = buckets.flatMap((b) => STAT_NAMES.map((n) => this.k.stats(n, b)));
    // PFCOUNT over several keys counts the union: an endpoint seen in two hours counts once.
    const p = pipe(this.redis).mget(counterKeys).pfcount(buckets.map(this.k.endpointsHll));
    const [counts, unique] = (await execPipeline(p)) as [(string | null)[], number];
    counts.forEach((v, i) => {
      out[STAT_NAMES[i % STAT_NAMES.length]!] += v === null ? 0 : Number(v);
    });
    out.unique_endpoints = unique;
    return out;
  }

  async timeline(now: number, window: TimelineWindow): Promise<Timeline> {
    const starts = timelineStarts(now, window);
    const seconds = TIMELINE[window].bucketMs / 1000;
    const p = pipe(this.redis);
    for (const s of starts) p.hgetall(this.k.timeline(seconds, s));
    const rows = (await execPipeline(p)) as Record<string, string>[];
    return timelineOf(
      window,
      starts,
      rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)]))),
    );
  }

  async ping(): Promise<void> {
    await call(() => this.redis.ping());
  }

  async close(): Promise<void> {
    // quit() waits for replies still in flight; a client that is already gone has nothing to close.
    if (this.redis.status === 'end') return;
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  // Recovery and listing: workers/redis/recovery.ts, on the same client (created lazily).
  private rec: RedisRecovery | undefined;
  private get recovery(): RedisRecovery {
    return (this.rec ??= new RedisRecovery(this.redis, this.ttls, this.k, this.sched));
  }
  restore: HotState['restore'] = (items) => this.recovery.restore(items);
  private orphans: RedisOrphans | undefined;
  unscheduled: HotState['unscheduled'] = (items, now) => (this.orphans ??= new RedisOrphans(this.redis, this.ttls, this.k, this.sched)).unscheduled(items, now);
  reschedule: HotState['reschedule'] = (items) => (this.orphans ??= new RedisOrphans(this.redis, this.ttls, this.k, this.sched)).reschedule(items);
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
