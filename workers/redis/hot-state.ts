import type { Command, Redis } from 'ioredis';
import { keys } from '../../core/domain/keys';
import { HISTORY_LIMIT, OUTSTANDING_STATES, type WebhookStatus, type WebhookStatusView } from '../../core/domain/status';
import { HISTORY_FIELD, historyOf } from '../../core/domain/status-history';
import { hourBucket } from '../../core/domain/time';
import { TIMELINE, TIMELINE_WINDOWS, bucketStart, bucketTtlMs, timelineOf, timelineStarts, type Timeline, type TimelineWindow } from '../../core/domain/timeline';
import { STAT_NAMES, type HotBatch, type HotState, type HotTtls, type IdempotencyClaim, type RetryEntry, type StatsWindow, type StatusWrite } from '../../core/ports/hot-state';
import { call, execPipeline } from './exec';
import { commitIdempotency } from './idempotency';
import { RedisRecovery } from './recovery';
import { RespArgs } from './resp';
import { batchScript, scriptCommand } from './script-call';
import { BATCH_SCRIPTS, scriptedPipeline, withScripts, type ScriptedClient, type ScriptedPipeline } from './scripts';

// HotState on Redis (keys: core/domain/keys.ts), one round trip per method, held to core/memory/hot-state.ts's semantics by test/contract/hot-state.contract.ts.

const HOUR_MS = 3_600_000;
/** Most statuses one merged apply carries (one batch alone may carry more). */
const MAX_MERGED_STATUSES = 1000;
const retryDataPrefix = keys.retryData('');
const STATUS_PREFIX = keys.status('');
const HISTORY_PREFIX = keys.statusHistory('');
const WRITE_STATUSES = batchScript(BATCH_SCRIPTS.writeStatuses);

/** A status's config/endpoint pair ('' when it names none: a patch of a held webhook), as index targets group them. */
const pairOf = (s: Partial<WebhookStatus>): string => (typeof s.config_id === 'string' && typeof s.endpoint_hash === 'string' ? `${s.config_id}\n${s.endpoint_hash}` : '');

/** A status's four arguments in a block (its attempt, when the block has them, follows). */
const statusRow = (args: RespArgs, { status, patch }: StatusWrite): RespArgs =>
  args
    .str(JSON.stringify(status))
    .str(status.updated_at_ns)
    .str(patch ? '*' : (status.state ?? ''))
    .str(status.webhook_id);

/** An ioredis pipeline takes a Command as it comes (ChainableCommander's type does not show it). */
type PipelineOf = { sendCommand(c: Command): unknown };

export class RedisHotState implements HotState {
  private readonly redis: ScriptedClient;

  constructor(
    redis: Redis,
    private readonly ttls: HotTtls,
  ) {
    this.redis = withScripts(redis);
  }

  async claimIdempotency(items: IdempotencyClaim[], ttlMs: number): Promise<string[]> {
    if (!items.length) return [];
    const p = scriptedPipeline(this.redis);
    for (const { configId, key, webhookId } of items) p.howk_claimIdempotency(keys.idempotency(configId, key), keys.legacyIdempotency(configId, key), webhookId, ttlMs);
    const prev = await execPipeline(p);
    return items.map((item, i) => (prev[i] as string | null) ?? item.webhookId);
  }

  commitIdempotency = (items: (IdempotencyClaim & { from: string })[], ttlMs: number) => commitIdempotency(this.redis, items, ttlMs);
  async releaseIdempotency(items: IdempotencyClaim[]): Promise<void> {
    if (!items.length) return;
    const p = scriptedPipeline(this.redis);
    for (const { configId, key, webhookId } of items) p.howk_releaseIdempotency(keys.idempotency(configId, key), webhookId);
    await execPipeline(p);
  }

  /**
   * Writes arriving while an apply is in flight wait for it, then leave together: one
   * pipeline with one writeStatuses.lua call for all their statuses. With pipelined
   * consumption a worker writes many small batches at once, and each round trip and script
   * call costs the worker and Redis more than the statuses it carries. An idle writer sends
   * at once. Each caller resolves when the round trip that carried its batch succeeded.
   */
  apply(batch: HotBatch): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.applies.push({ batch, resolve, reject });
      if (!this.applying) this.pumpApplies();
    });
  }

  private readonly applies: { batch: HotBatch; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private applying = false;

  private pumpApplies(): void {
    if (!this.applies.length) {
      this.applying = false;
      return;
    }
    this.applying = true;
    let statuses = 0;
    let n = 0;
    while (n < this.applies.length && (n === 0 || statuses + (this.applies[n]!.batch.statuses?.length ?? 0) <= MAX_MERGED_STATUSES))
      statuses += this.applies[n++]!.batch.statuses?.length ?? 0;
    const taken = this.applies.splice(0, n);
    const run = async () => {
      try {
        await this.write(taken.map((t) => t.batch));
        for (const t of taken) t.resolve();
      } catch (e) {
        // An error reply (a defect in one batch) must not fail the batches that only shared
        // its round trip: each is written again on its own. Redis away fails them all.
        if (taken.length === 1 || !(e instanceof Error && e.name === 'ReplyError')) {
          for (const t of taken) t.reject(e);
          return;
        }
        await Promise.all(taken.map((t) => this.write([t.batch]).then(t.resolve, t.reject)));
      }
    };
    void run().finally(() => this.pumpApplies());
  }

  /** Batches in the order given: all statuses in one script call (LWW: order-free), then each batch's retries, ended and stats. */
  private async write(batches: HotBatch[]): Promise<void> {
    const p = scriptedPipeline(this.redis);
    const { retry_data_ttl, stats_ttl } = this.ttls;
    const statuses = batches.flatMap((b) => b.statuses ?? []);
    // Encoded by hand (workers/redis/resp.ts: the bytes ioredis would send), first in the pipeline as before.
    if (statuses.length) (p as unknown as PipelineOf).sendCommand(scriptCommand(this.redis, WRITE_STATUSES, this.statusArgs(statuses)));
    for (const batch of batches) {
      // Data before the schedule entry: a pipeline is not atomic, and a claim that ran between
      // the two would drop an entry already due (Retry-After: 0) whose data was not there yet.
      for (const r of batch.retries ?? []) {
        p.set(keys.retryData(r.id), r.data, 'PX', retry_data_ttl);
        p.zadd(keys.retries(), r.dueAt, r.id);
      }
      // One ZREM and one DEL per batch, not two commands per webhook.
      const ended = batch.ended ?? [];
      if (ended.length) p.zrem(keys.retries(), ...ended).del(...ended.map(keys.retryData));
      if (batch.stats) this.addStats(p, batch.stats, stats_ttl);
    }
    if (p.length) await execPipeline(p);
  }

  /**
   * writeStatuses.lua's arguments: blocks of statuses, each with its config/endpoint pair's
   * index keys and its counts of statuses with and without an attempt, sent once. One block
   * per pair when each webhook appears once; when one appears twice, blocks follow the order
   * given, which its writes need (a patch merges into what came before).
   */
  private statusArgs(statuses: StatusWrite[]): RespArgs {
    const ids = new Set<string>();
    for (const { status } of statuses) ids.add(status.webhook_id);
    const once = ids.size === statuses.length;
    this.statusHead ??= new RespArgs().str(STATUS_PREFIX).str(HISTORY_PREFIX).num(this.ttls.status_ttl).num(HISTORY_LIMIT);
    const args = new RespArgs()
      .append(this.statusHead)
      .str(this.recovery.indexFloor())
      .num(once ? 0 : 1);
    if (once) {
      const blocks = new Map<string, { with: StatusWrite[]; without: StatusWrite[] }>();
      for (const s of statuses) {
        const pair = pairOf(s.status);
        let block = blocks.get(pair);
        if (!block) blocks.set(pair, (block = { with: [], without: [] }));
        (s.attempt ? block.with : block.without).push(s);
      }
      for (const block of blocks.values()) this.pushBlock(args, block.with, block.without);
    } else {
      for (let i = 0; i < statuses.length;) {
        const pair = pairOf(statuses[i]!.status);
        const attempt = !!statuses[i]!.attempt;
        let end = i + 1;
        while (end < statuses.length && !!statuses[end]!.attempt === attempt && pairOf(statuses[end]!.status) === pair) end++;
        const run = statuses.slice(i, end);
        this.pushBlock(args, attempt ? run : [], attempt ? [] : run);
        i = end;
      }
    }
    return args;
  }

  /** The arguments every call begins with that never change: the key prefixes, the TTL, the history limit. */
  private statusHead: RespArgs | undefined;

  private pushBlock(args: RespArgs, withAttempt: StatusWrite[], without: StatusWrite[]): void {
    const { configIndex, endpointIndex, prefix } = this.recovery.indexTargets((withAttempt[0] ?? without[0])!.status);
    args.str(configIndex).str(endpointIndex).str(prefix).num(withAttempt.length).num(without.length);
    for (const s of withAttempt) statusRow(args, s).str(JSON.stringify(s.attempt));
    for (const s of without) statusRow(args, s);
  }

  private addStats(p: ScriptedPipeline, stats: NonNullable<HotBatch['stats']>, ttl: number): void {
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
    const p = this.redis.pipeline().hmget(keys.status(id), 'data', HISTORY_FIELD).lrange(keys.statusHistory(id), 0, -1);
    const [[data, field], list] = (await execPipeline(p)) as [[string | null, string | null], string[]];
    if (data === null) return null;
    return { ...(JSON.parse(data) as WebhookStatus), history: historyOf(list, field) };
  }

  /** The state indexes writeStatuses.lua keeps, counted from the index floor (entries older than status_ttl are as good as trimmed). */
  async countOutstanding(configId: string): Promise<number> {
    const p = this.redis.pipeline();
    const floor = `(${this.recovery.indexFloor()}`;
    for (const state of OUTSTANDING_STATES) p.zlexcount(keys.webhookStateIndex(configId, state), floor, '+');
    const counts = (await execPipeline(p)) as number[];
    return counts.reduce((a, b) => a + Number(b), 0);
  }

  async claimDueRetries(now: number, limit: number, leaseMs: number): Promise<RetryEntry[]> {
    if (limit <= 0) return [];
    const flat = (await call(() => this.redis.howk_claimRetries(keys.retries(), now, limit, now + leaseMs, retryDataPrefix))) as string[];
    const out: RetryEntry[] = [];
    for (let i = 0; i + 2 < flat.length; i += 3) out.push({ id: flat[i]!, data: flat[i + 1]!, dueAt: Number(flat[i + 2]) });
    return out;
  }

  async renewLeases(items: { id: string; from: number; to: number }[]): Promise<number> {
    if (!items.length) return 0;
    const args = items.flatMap((i) => [i.id, i.from, i.to]);
    return Number(await call(() => this.redis.howk_renewLeases(keys.retries(), ...args)));
  }

  async ackRetries(items: { id: string; leaseDueAt: number }[]): Promise<void> {
    if (!items.length) return;
    const args = items.flatMap(({ id, leaseDueAt }) => [id, leaseDueAt]);
    await call(() => this.redis.howk_ackRetries(keys.retries(), retryDataPrefix, ...args));
  }

  async retryCount(): Promise<number> {
    return call(() => this.redis.zcard(keys.retries()));
  }

  async stats(now: number, hours: number): Promise<StatsWindow> {
    const out = Object.fromEntries(STAT_NAMES.map((n) => [n, 0])) as StatsWindow;
    out.unique_endpoints = 0;
    if (hours <= 0) return out;
    const buckets = Array.from({ length: hours }, (_, h) => hourBucket(now - h * HOUR_MS));
    const counterKeys = buckets.flatMap((b) => STAT_NAMES.map((n) => keys.stats(n, b)));
    // PFCOUNT over several keys counts the union: an endpoint seen in two hours counts once.
    const p = this.redis.pipeline().mget(counterKeys).pfcount(buckets.map(keys.endpointsHll));
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
    const p = this.redis.pipeline();
    for (const s of starts) p.hgetall(keys.timeline(seconds, s));
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
    return (this.rec ??= new RedisRecovery(this.redis, this.ttls));
  }
  restore: HotState['restore'] = (items) => this.recovery.restore(items);
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
