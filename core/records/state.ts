import { objectMembers, slice } from '../domain/raw-json';
import type { WebhookStatus } from '../domain/status';
import { iso } from '../domain/time';
import { decodeWebhook, encodeWebhook, type Webhook } from './webhook';

// The record of howk.state (compacted). Key: the webhook id (`stateKey`). Value: a snapshot,
// what a webhook waiting outside the pending topics needs to resume (its status and the
// webhook, payload raw), written whenever it waits: a retry scheduled, a webhook parked or
// held by a pause, a straggler's lease. Tombstone (`stateTombstone`): the webhook ended
// (delivered, exhausted, dead); what a later snapshot of the same id may still do is the
// rebuild's rule (core/reconcile/replay.ts).

export const stateKey = (w: Pick<Webhook, 'id'>): string => w.id;

/** The record that ends a webhook's state. */
export const stateTombstone = (webhookId: string): { key: string; value: null } => ({ key: webhookId, value: null });

/**
 * A snapshot: the recoverable state plus the webhook to resume it (`encoded`: its record
 * text when the caller has it, so that the payload's bytes are the ones it holds). Its
 * `state` follows `status.held`: `paused` (a pause holds it), `parked` (a circuit or the
 * rate limit holds it), else `retrying`.
 */
export const snapshotValue = (w: Webhook, status: Partial<WebhookStatus> & Pick<WebhookStatus, 'updated_at_ns'>, dueAt: number, encoded = encodeWebhook(w)): string => {
  const head = JSON.stringify({
    webhook_id: w.id,
    state: status.held === 'paused' ? 'paused' : status.held ? 'parked' : 'retrying',
    next_retry_at: iso(dueAt),
    updated_at_ns: status.updated_at_ns,
    status,
  });
  return `${head.slice(0, -1)},"webhook":${encoded}}`;
};

/** A snapshot read back (`parseSnapshot`, which throws on a malformed one). */
export type Snapshot = {
  webhookId: string;
  /** 'retrying', 'parked' or 'paused' (held back without spending an attempt). */
  kind: string;
  /** When the webhook is due again (ms). */
  dueAt: number;
  updatedAtNs: string;
  /** As recorded: a full status after an attempt, the changed fields for a held webhook. */
  status: Partial<WebhookStatus>;
  webhook: Webhook;
  /** The webhook exactly as encoded in the record (raw payload): the retry data. */
  data: string;
  progress: number;
};

export const progressOf = (w: Pick<Webhook, 'attempt' | 'deferrals'>): number => w.attempt + w.deferrals;

/** 19-digit ns stamps as text: a longer one is larger; equal lengths compare as text. */
export const compareStamps = (a: string, b: string): number => (a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0);

export const parseSnapshot = (value: string): Snapshot => {
  const span = objectMembers(value, 0).get('webhook');
  if (!span) throw new SyntaxError('snapshot has no webhook');
  const data = slice(value, span);
  const webhook = decodeWebhook(data);
  const head = JSON.parse(value) as Record<string, unknown>;
  const updatedAtNs = head.updated_at_ns;
  if (typeof updatedAtNs !== 'string' || !/^\d{1,25}$/.test(updatedAtNs)) throw new SyntaxError('snapshot has no updated_at_ns');
  const due = typeof head.next_retry_at === 'string' ? Date.parse(head.next_retry_at) : NaN;
  const status = typeof head.status === 'object' && head.status !== null ? (head.status as Partial<WebhookStatus>) : {};
  return {
    webhookId: webhook.id,
    kind: typeof head.state === 'string' ? head.state : 'retrying',
    // Without a due time it is due at once: an early attempt is better than a lost one.
    dueAt: Number.isFinite(due) ? due : 0,
    updatedAtNs,
    status,
    webhook,
    data,
    progress: progressOf(webhook),
  };
};
