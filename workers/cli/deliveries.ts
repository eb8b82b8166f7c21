import type { Command } from 'commander';
import type { ListBody } from '../../core/http/routes/webhooks';
import type { Api } from './api-client';
import { apiClient } from './api-client';
import { intArg, out, printJson, table, timeArg, type GlobalOpts } from './io';

// `howk status <id>` and `howk deliveries list`, over GET /webhooks/:id/status and GET /webhooks.

type Row = {
  webhook_id: string;
  state: string;
  endpoint: string;
  attempts: number;
  max_attempts: number;
  created_at: string;
  last_status_code: number | null;
  last_error: string | null;
};

export type ListFilters = { config: string; state?: string; endpoint?: string; since?: number; until?: number; limit: number; cursor?: string };

/**
 * Newest first, as GET /webhooks pages them. since/until are applied here on created_at:
 * rows newer than `until` are skipped, and the walk stops at the first row older than `since`.
 */
export const listDeliveries = async (api: Api, f: ListFilters): Promise<{ items: Row[]; next_cursor: string | null }> => {
  const items: Row[] = [];
  let cursor = f.cursor;
  for (;;) {
    const page = await api.get<ListBody<Row>>('/webhooks', { config_id: f.config, state: f.state, endpoint: f.endpoint, cursor, limit: Math.min(500, f.limit - items.length) });
    for (const r of page.items) {
      const at = Date.parse(r.created_at);
      if (f.since !== undefined && at < f.since) return { items, next_cursor: null };
      if (f.until !== undefined && at > f.until) continue;
      items.push(r);
    }
    cursor = page.next_cursor ?? undefined;
    // Each page asks for what is left, so the limit falls on a page end and its cursor is exact.
    if (!cursor || items.length >= f.limit) return { items, next_cursor: cursor ?? null };
  }
};

const showStatus = (s: Record<string, unknown> & { history?: Record<string, unknown>[] }): void => {
  const fields = [
    'webhook_id',
    'config_id',
    'state',
    'endpoint',
    'attempts',
    'max_attempts',
    'created_at',
    'last_attempt_at',
    'last_status_code',
    'last_error',
    'next_retry_at',
    'dead_reason',
    'held',
    'replay_of',
  ];
  out(
    table(
      ['field', 'value'],
      fields.filter((k) => s[k] !== undefined).map((k) => [k, s[k]]),
    ),
  );
  if (s.history?.length) {
    out('');
    out(
      table(
        ['attempt', 'at', 'outcome', 'status', 'ms', 'error'],
        s.history.map((h) => [h.attempt, h.at, h.outcome, h.status_code, h.duration_ms, h.error]),
      ),
    );
  }
};

export const registerDeliveries = (program: Command, globals: () => GlobalOpts): void => {
  program
    .command('status')
    .description('Status and attempt history of one webhook (GET /webhooks/:id/status)')
    .argument('<id>', 'webhook id')
    .action(async (id: string) => {
      const s = await apiClient(globals()).get<Record<string, unknown>>(`/webhooks/${encodeURIComponent(id)}/status`);
      if (globals().json) printJson(s);
      else showStatus(s);
    });

  const deliveries = program.command('deliveries').description('Webhooks of a config (GET /webhooks)');
  deliveries
    .command('list')
    .description('Newest first; every filter optional but --config')
    .requiredOption('--config-id <id>', 'config id')
    .option('--state <state>', 'pending, retrying, delivered, failed, ...')
    .option('--endpoint <url>', 'only webhooks to this endpoint URL')
    .option('--since <time>', 'created at or after (ISO date, unix ms, or a duration ago: 2h)', timeArg)
    .option('--until <time>', 'created at or before', timeArg)
    .option('--limit <n>', 'most rows', intArg(1, 100_000), 50)
    .option('--cursor <cursor>', 'next_cursor of a previous listing')
    .action(async (o: { configId: string; state?: string; endpoint?: string; since?: number; until?: number; limit: number; cursor?: string }) => {
      const r = await listDeliveries(apiClient(globals()), { ...o, config: o.configId });
      if (globals().json) return printJson({ items: r.items, count: r.items.length, next_cursor: r.next_cursor });
      out(
        table(
          ['webhook_id', 'state', 'attempts', 'last', 'created_at', 'endpoint'],
          r.items.map((w) => [w.webhook_id, w.state, `${w.attempts}/${w.max_attempts}`, w.last_status_code ?? w.last_error, w.created_at, w.endpoint]),
        ),
      );
      out(r.next_cursor ? `more: --cursor ${r.next_cursor}` : `${r.items.length} webhook(s)`);
    });
};
