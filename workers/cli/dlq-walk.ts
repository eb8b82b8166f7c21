import type { DeadLetterRow } from '../../core/http/routes/deadletter';
import type { ListBody } from '../../core/http/routes/webhooks';
import type { Api } from './api-client';

// Paging through GET /deadletter, for `howk dlq list` and the bulk replay (dlq-replay.ts) alike.

export type DlqFilters = { config: string; reason?: string; since?: number; until?: number };

/** Oldest first from `since`; stops at the first dead letter after `until`. `page` sees each page with the cursor after it. */
export const walkDeadLetters = async (
  api: Api,
  f: DlqFilters,
  start: string | undefined,
  pageSize: () => number,
  page: (rows: DeadLetterRow[], next: string | null) => Promise<boolean>,
): Promise<void> => {
  let cursor = start;
  // A webhook dead-lettered twice (an attempt redelivered after a crash) can be listed twice.
  const seen = new Set<string>();
  for (;;) {
    const p = await api.get<ListBody<DeadLetterRow>>('/deadletter', { config_id: f.config, reason_type: f.reason, since: cursor ? undefined : f.since, cursor, limit: pageSize() });
    const inRange = f.until === undefined ? p.items : p.items.filter((r) => Date.parse(r.dead_at) <= f.until!);
    const ended = inRange.length < p.items.length || !p.next_cursor;
    const rows = inRange.filter((r) => !seen.has(r.webhook_id) && seen.add(r.webhook_id));
    if (!(await page(rows, ended ? null : p.next_cursor)) || ended) return;
    cursor = p.next_cursor!;
  }
};
