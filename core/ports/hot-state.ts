import type { StatName } from '../domain/stats';
import type { AttemptRecord, WebhookStatus, WebhookStatusView } from '../domain/status';
import type { Timeline, TimelineWindow } from '../domain/timeline';
import type { DeadLetterEntry, DeadLetterQuery, OrphanRepair, Page, RestoreItem, WebhookQuery } from './recovery';

// Rebuildable hot state (Redis in production, memory in howk-dev). Operations are shaped
// per batch: one call is one round trip.

export { STAT_NAMES, type StatName } from '../domain/stats';

/** The fields a held-back webhook changes; the rest of its status stays as the last attempt left it. */
export type StatusPatch = Partial<WebhookStatus> & Pick<WebhookStatus, 'webhook_id' | 'updated_at_ns'>;

export type StatusWrite = {
  status: WebhookStatus | StatusPatch;
  /** Appended to the status history (kept to the last 20). */
  attempt?: AttemptRecord;
  /** Merge `status`'s fields into the stored status instead of replacing it. */
  patch?: boolean;
};

export type RetryEntry = { id: string; dueAt: number; /** the encoded webhook to re-enqueue */ data: string };

export type HotBatch = {
  statuses?: StatusWrite[];
  retries?: RetryEntry[];
  /**
   * Webhooks that reached a terminal outcome (delivered, dead): a retry still scheduled for
   * one of them is a stale copy (a redelivered batch, a schedule a rebuild restored while
   * the webhook was already on its way) and is removed, after `retries` are written.
   */
  ended?: string[];
  stats?: { at: number; counts: Partial<Record<StatName, number>>; endpoints?: string[] };
};

export type StatsWindow = Record<StatName, number> & { unique_endpoints: number };

export type IdempotencyClaim = { configId: string; key: string; webhookId: string };

export type HotTtls = {
  status_ttl: number;
  stats_ttl: number;
  retry_data_ttl: number;
  /** How long a dead letter stays listable in the hot state (default: status_ttl). */
  deadletter_ttl?: number;
  /** Shards of the retry schedule (redis.retry_shards; default DEFAULT_RETRY_SHARDS). Fixed for a store's life. */
  retry_shards?: number;
};

// The port by role: each consumer names only the roles it uses (enqueue: idempotency and
// writes; the scheduler: the retry schedule; the edge: status and stats reads), and a
// runtime implements only the roles its consumers need. Each role has its own contract
// suite (test/contract/hot-state.contract-*.ts). The Node adapters implement all of them.

/** Enqueue and redrive: one webhook per idempotency key. */
export type IdempotencyStore = {
  /**
   * Claims idempotency keys; for each item the value that holds the key: the given
   * `webhookId` when this call claimed it, or the earlier claim's. Enqueue claims with
   * `<webhook id> <request fingerprint>` (core/pipeline/idempotency.ts), which the store
   * keeps as an opaque value.
   */
  claimIdempotency(items: IdempotencyClaim[], ttlMs: number): Promise<string[]>;
  /** Gives keys back (enqueue failed after claiming), only where they still hold our id. */
  releaseIdempotency(items: IdempotencyClaim[]): Promise<void>;
  /**
   * Replaces a claim's value `from` (made while its webhook was produced) with `webhookId`,
   * living `ttlMs` from now. Only this claim's request holds `from`: a store may write over
   * the key without comparing (Redis: SET XX), as long as the key still exists.
   */
  commitIdempotency(items: (IdempotencyClaim & { from: string })[], ttlMs: number): Promise<void>;
};

/** Every writer of outcomes (enqueue, delivery, handoff, redrive). */
export type HotWriter = {
  /** Status (last-write-wins by updated_at_ns), history, retries and stats in one round trip. */
  apply(batch: HotBatch): Promise<void>;
};

/** GET /webhooks/:id/status, the auth middleware's config check, redrive. */
export type StatusReader = {
  getStatus(id: string): Promise<WebhookStatusView | null>;
};

/**
 * The worker, for records it may have consumed before (a partition it was just given: its last
 * owner may have delivered them): which of these webhooks have a stored status that ended
 * (delivered, failed, exhausted), with that status's attempt count (attempts + deferrals).
 * Webhooks with no such status are left out.
 */
export type EndedLookup = {
  endedAttempts(ids: readonly string[]): Promise<Map<string, number>>;
  /** The ended statuses (as endedAttempts) and the sent marks of these webhooks, in one round trip. */
  lookup?(ids: readonly string[]): Promise<{ ended: Map<string, number>; sent: Map<string, SentMark> }>;
  /**
   * Marks passes answered 2xx, written right after the answer and before the outcome's
   * records: a worker killed in between leaves the mark, and the next pass over the same
   * record writes the outcome instead of sending it again (docs/RELIABILITY.md, *Sent marks*).
   * Best effort: a mark not written only means the copy is sent.
   */
  markSent?(marks: readonly { id: string; mark: SentMark }[]): Promise<void>;
};

/** A pass (attempt + deferrals) an endpoint answered 2xx: the status code, when (ms), and how long it took. */
export type SentMark = { pass: number; status: number; at: number; durationMs: number };

/** GET /webhooks. Listing indexes follow every status write (apply and restore). */
export type WebhookListing = {
  listWebhooks(q: WebhookQuery): Promise<Page<WebhookStatus>>;
};

/**
 * The enqueue door (api.max_outstanding_per_config) and GET /configs/:config/status: webhooks
 * of a config accepted and not yet terminal (state pending or retrying, held ones included).
 * Read from what status writes keep anyway (no write of its own): a webhook counts from its
 * 'pending' status until its terminal one.
 */
export type OutstandingCounter = {
  countOutstanding(configId: string): Promise<number>;
};

/** The scheduler, the handoff and its lease keeper. */
export type RetrySchedule = {
  /**
   * Claims up to `limit` retries due at `now` under a visibility lease: they stay in the
   * schedule, moved to now+leaseMs, so a claimer that dies before ackRetries loses nothing.
   * Only from `shards` when given (default: every shard). Each shard visited gets an equal
   * share of `limit` (what a shard with fewer due leaves goes to the others), and within a
   * shard each config with due retries an equal share of the shard's (earliest due first
   * within a config): one config's retry storm cannot hold back another config's due retries.
   */
  claimDueRetries(now: number, limit: number, leaseMs: number, shards?: readonly number[]): Promise<RetryEntry[]>;
  /** Removes re-enqueued retries (only those whose lease is still `leaseDueAt`, so a newer schedule survives). */
  ackRetries(items: { id: string; leaseDueAt: number }[]): Promise<void>;
  /** Moves leases still at `from` to `to` (work still running); returns how many were renewed. */
  renewLeases(items: { id: string; from: number; to: number }[]): Promise<number>;
  retryCount(): Promise<number>;
};

/**
 * The schedulers' shares of the retry schedule (core/domain/shard-leases.ts): each holds some
 * shards under a lease it renews every pass, so K schedulers split the shards, and a dead
 * one's shards are taken over once its leases run out.
 */
export type ShardLeases = {
  readonly retryShards: number;
  /** Heartbeat, renew, rebalance: the shards `owner` holds until now + leaseMs (ascending). */
  holdShards(owner: string, now: number, leaseMs: number): Promise<number[]>;
  /** Gives back every shard `owner` holds (a scheduler that stops). */
  releaseShards(owner: string): Promise<void>;
  /**
   * Moves up to `limit` entries of the schedule kept before the shards (a store upgraded while
   * retries were scheduled; the edge's park) into their shards. Returns how many it looked at:
   * 0 once it is empty.
   */
  drainLegacyRetries(limit: number): Promise<number>;
};

/** GET /stats (the counters are written by apply). */
export type StatsReader = {
  stats(now: number, hours: number): Promise<StatsWindow>;
};

/** GET /stats/timeline (the counters are written by apply, beside the hourly ones). */
export type TimelineReader = {
  timeline(now: number, window: TimelineWindow): Promise<Timeline>;
};

/** Dead letters (types in ./recovery.ts): indexed by the worker's producer and the rebuild, read by the API and redrive. */
export type DeadLetterStore = {
  /** Stores dead letters (per webhook the one with the latest dead_at) and indexes them by config and reason. */
  putDeadLetters(items: DeadLetterEntry[]): Promise<void>;
  /** The raw record of a webhook's latest dead letter. */
  getDeadLetter(webhookId: string): Promise<string | null>;
  listDeadLetters(q: DeadLetterQuery): Promise<Page<string>>;
};

/** The reconciler and its sentinel (docs/RELIABILITY.md, Redis loss). */
export type RebuildState = {
  /**
   * Writes replayed statuses where nothing as new is stored (LWW by updated_at_ns), and
   * with each written one its retry, unless that webhook is already scheduled. A status
   * the live system has written since is never replaced, nor its schedule. Returns how
   * many statuses were written.
   */
  restore(items: RestoreItem[]): Promise<number>;
  /** The canary (howk:system:initialized): absent after a Redis loss. */
  isInitialized(): Promise<boolean>;
  markInitialized(note: string): Promise<void>;
  /** The rebuild lock (howk:reconciler:lock): taken only when free; renewed and released only by its owner. */
  acquireLock(owner: string, ttlMs: number): Promise<boolean>;
  renewLock(owner: string, ttlMs: number): Promise<boolean>;
  releaseLock(owner: string): Promise<void>;
};

/** Health checks and shutdown. */
export type HotConnection = {
  ping(): Promise<void>;
  close(): Promise<void>;
};

/** Every role: what the Node fleet wires (Redis in production, memory in howk-dev). */
export type HotState = IdempotencyStore &
  HotWriter &
  StatusReader &
  WebhookListing &
  OutstandingCounter &
  RetrySchedule &
  ShardLeases &
  StatsReader &
  TimelineReader &
  DeadLetterStore &
  RebuildState &
  OrphanRepair &
  HotConnection;
