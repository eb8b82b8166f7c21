import { WebhookState } from '../domain/status';
import { ValidationError } from '../errors/errors';
import { CONFIG_ID } from '../domain/config-id';
import type { DeadLetterQuery, Page } from '../ports/recovery';

// Rules of the two listings (GET /webhooks, GET /deadletter): query validation, cursors,
// and the time floors below which index entries are trimmed.

export const LIST_DEFAULT_LIMIT = 50;
export const LIST_MAX_LIMIT = 500;

type Params = Record<string, string | undefined>;

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
export const ID_CURSOR = /^[A-Za-z0-9_]{1,64}$/;
export const DL_CURSOR = /^\d{13}:[A-Za-z0-9_]{1,64}$/;
export const REASON = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The smallest webhook id made at `ms` ('wh_' + the 10-character ULID time): every id
 * below it is older. Index entries under it are trimmed once their status has expired.
 */
export const idFloor = (ms: number): string => {
  let out = '';
  let t = Math.max(0, Math.floor(ms));
  for (let i = 0; i < 10; i++) {
    out = CROCKFORD[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return `wh_${out}`;
};

/** Dead-letter index member: time first, so lexicographic order is dead_at order. */
export const deadLetterMember = (deadAtMs: number, webhookId: string): string => `${String(Math.max(0, Math.floor(deadAtMs))).padStart(13, '0')}:${webhookId}`;

/** Members at or after `ms` are >= this bound. */
export const deadLetterFloor = (ms: number): string => String(Math.max(0, Math.floor(ms))).padStart(13, '0');

export const webhookIdOfMember = (member: string): string => member.slice(member.indexOf(':') + 1);

const limitOf = (v: string | undefined): number => {
  if (v === undefined || v === '') return LIST_DEFAULT_LIMIT;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > LIST_MAX_LIMIT) throw new ValidationError(`limit must be an integer from 1 to ${LIST_MAX_LIMIT}`, 'limit');
  return n;
};

const configOf = (v: string | undefined): string => {
  if (!v) throw new ValidationError('config_id is required', 'config_id');
  if (!CONFIG_ID.test(v)) throw new ValidationError('config_id must be 1-128 characters of A-Z a-z 0-9 . _ : -', 'config_id');
  return v;
};

export type WebhookListQuery = { configId: string; state?: WebhookState; endpoint?: string; cursor?: string; limit: number };

export const parseWebhookListQuery = (q: Params): WebhookListQuery => {
  const configId = configOf(q.config_id);
  let state: WebhookState | undefined;
  if (q.state) {
    const s = WebhookState.safeParse(q.state);
    if (!s.success) throw new ValidationError(`state must be one of ${WebhookState.options.join(', ')}`, 'state');
    state = s.data;
  }
  if (q.endpoint !== undefined && (q.endpoint === '' || q.endpoint.length > 4096)) throw new ValidationError('endpoint must be the webhook endpoint URL', 'endpoint');
  if (q.cursor && !ID_CURSOR.test(q.cursor)) throw new ValidationError('cursor is not one this listing returned', 'cursor');
  return { configId, ...(state ? { state } : {}), ...(q.endpoint ? { endpoint: q.endpoint } : {}), ...(q.cursor ? { cursor: q.cursor } : {}), limit: limitOf(q.limit) };
};

/** `since`: an ISO date or unix milliseconds. */
const sinceOf = (v: string | undefined): number | undefined => {
  if (v === undefined || v === '') return undefined;
  const n = /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isFinite(n) || n < 0) throw new ValidationError('since must be an ISO 8601 date or unix milliseconds', 'since');
  return n;
};

export const parseDeadLetterListQuery = (q: Params): DeadLetterQuery => {
  const configId = configOf(q.config_id);
  if (q.reason_type && !REASON.test(q.reason_type)) throw new ValidationError('reason_type is not a dead-letter reason', 'reason_type');
  if (q.cursor && !DL_CURSOR.test(q.cursor)) throw new ValidationError('cursor is not one this listing returned', 'cursor');
  const since = sinceOf(q.since);
  return {
    configId,
    ...(q.reason_type ? { reasonType: q.reason_type } : {}),
    ...(since !== undefined ? { since } : {}),
    ...(q.cursor ? { cursor: q.cursor } : {}),
    limit: limitOf(q.limit),
  };
};

/** Index entries examined at most per listing call: a sparse filter returns a partial page and a cursor. */
export const scanBudget = (limit: number): number => Math.max(1000, limit * 10);

export type Candidate<T> = { key: string; item: T | null };

/**
 * One page over an ordered index, shared by every adapter so that listings page the same
 * way everywhere. `fetch(after, n)` returns up to n entries strictly after the cursor
 * (with their item, or null when it is gone); `keep` filters. `next` is null once the
 * index is exhausted; a page can be short (or empty) with a cursor when the scan budget
 * ran out first.
 */
export const scanPage = async <T>(
  q: { cursor?: string; limit: number },
  fetch: (after: string | undefined, n: number) => Promise<Candidate<T>[]>,
  keep: (item: T) => boolean,
): Promise<Page<T>> => {
  const items: T[] = [];
  let lastKept: string | undefined;
  let after = q.cursor;
  let scanned = 0;
  const budget = scanBudget(q.limit);
  for (let round = 0; ; round++) {
    // First exactly what a full page needs; after a sparse first round, larger steps.
    const want = Math.max(q.limit - items.length + 1, round === 0 ? 0 : 100);
    const got = await fetch(after, want);
    for (const c of got) {
      // One candidate past a full page: there may be more, continue after the last item.
      if (items.length === q.limit) return { items, next: lastKept ?? after ?? null };
      after = c.key;
      scanned++;
      if (c.item !== null && keep(c.item)) {
        items.push(c.item);
        lastKept = c.key;
      }
    }
    if (got.length < want) return { items, next: null };
    if (scanned >= budget) return { items, next: after ?? null };
  }
};
