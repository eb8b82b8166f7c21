import type { AttemptRecord, WebhookStatus, WebhookStatusView } from '../domain/status';

// Rebuildable hot state (Redis in production, memory in howk-dev). Operations are shaped
// per batch: one call is one round trip.

export type StatName = 'enqueued' | 'delivered' | 'failed' | 'exhausted' | 'dead_lettered' | 'retried';
export const STAT_NAMES: readonly StatName[] = ['enqueued', 'delivered', 'failed', 'exhausted', 'dead_lettered', 'retried'];

export type StatusWrite = {
  status: WebhookStatus;
  /** Appended to the status history (kept to the last 20). */
  attempt?: AttemptRecord;
};

export type RetryEntry = { id: string; dueAt: number; /** the encoded webhook to re-enqueue */ data: string };

export type HotBatch = {
  statuses?: StatusWrite[];
  retries?: RetryEntry[];
  stats?: { at: number; counts: Partial<Record<StatName, number>>; endpoints?: string[] };
};

export type StatsWindow = Record<StatName, number> & { unique_endpoints: number };

export type IdempotencyClaim = { configId: string; key: string; webhookId: string };

export type HotTtls = { status_ttl: number; stats_ttl: number; retry_data_ttl: number };

export type HotState = {
  /**
   * Claims idempotency keys; for each item the id that owns the key: the given id when
   * this call claimed it, or the earlier webhook's id.
   */
  claimIdempotency(items: IdempotencyClaim[], ttlMs: number): Promise<string[]>;
  /** Gives keys back (enqueue failed after claiming), only where they still hold our id. */
  releaseIdempotency(items: IdempotencyClaim[]): Promise<void>;
  /** Status (last-write-wins by updated_at_ns), history, retries and stats in one round trip. */
  apply(batch: HotBatch): Promise<void>;
  getStatus(id: string): Promise<WebhookStatusView | null>;
  /**
   * Claims up to `limit` retries due at `now` under a visibility lease: they stay in the
   * schedule, moved to now+leaseMs, so a claimer that dies before ackRetries loses nothing.
   */
  claimDueRetries(now: number, limit: number, leaseMs: number): Promise<RetryEntry[]>;
  /** Removes re-enqueued retries (only those whose lease is still `leaseDueAt`, so a newer schedule survives). */
  ackRetries(items: { id: string; leaseDueAt: number }[]): Promise<void>;
  retryCount(): Promise<number>;
  stats(now: number, hours: number): Promise<StatsWindow>;
  ping(): Promise<void>;
  close(): Promise<void>;
};
