import type { WebhookStatus } from '../domain/status';
import type { ConsumedBatch } from './log';

// Types of the rebuild, listing and dead-letter roles of HotState (docs/RELIABILITY.md), and
// the TopicReader port a rebuild replays Kafka with.

/** A status replayed from howk.state or howk.deadletter, with the retry to schedule again. */
export type RestoreItem = {
  status: WebhookStatus;
  retry?: { id: string; dueAt: number; data: string };
};

/** One page of a listing; `next` is the cursor of the following page, null at the end. */
export type Page<T> = { items: T[]; next: string | null };

/** Newest first. `cursor` is the `next` of the previous page (a webhook id). */
export type WebhookQuery = {
  configId: string;
  state?: string;
  endpointHash?: string;
  cursor?: string;
  limit: number;
};

/** A dead letter as stored for listing and replay: the raw howk.deadletter record plus what indexes it. */
export type DeadLetterEntry = {
  webhookId: string;
  configId: string;
  reasonType: string;
  deadAtMs: number;
  /** The record exactly as it is on howk.deadletter (the webhook's payload bytes untouched). */
  record: string;
};

/** Oldest first from `since` (ms). `cursor` is the `next` of the previous page. */
export type DeadLetterQuery = {
  configId: string;
  reasonType?: string;
  since?: number;
  cursor?: string;
  limit: number;
};

export type ReadSummary = {
  records: number;
  /** Partitions that had records when the read began. */
  partitions: number;
  /** Partitions given up on after the idle timeout (their last offsets were compacted away). */
  idled: number[];
};

/**
 * Reads a topic from its earliest offsets up to the high-water marks taken when the call
 * begins, one partition batch at a time in offset order. An empty topic returns at once.
 */
export type TopicReader = {
  readToEnd(topic: string, onBatch: (b: ConsumedBatch) => Promise<void>, opts: { idleTimeoutMs: number }): Promise<ReadSummary>;
  close(): Promise<void>;
};

/** The orphan sweep's view of the hot state (core/reconcile/orphans.ts). */
export type OrphanRepair = {
  /**
   * Of these webhooks, those that nothing in the hot state carries at `now`: no schedule entry
   * (a lease is one) and no in-flight record; each with its stored status (null: none).
   */
  unscheduled(items: { id: string; endpointHash: string }[], now: number): Promise<Map<string, WebhookStatus | null>>;
  /**
   * Schedules each item's retry unless its webhook is scheduled already (never replaces one),
   * and writes its status where none as new is stored. Returns the ids it scheduled.
   */
  reschedule(items: RestoreItem[]): Promise<string[]>;
};
