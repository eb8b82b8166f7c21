import type { Command } from 'commander';
import { apiClient } from './api-client';
import { intArg, out, printJson, table, timeArg, type GlobalOpts } from './io';
import { replayDeadLetters, type ReplayOpts } from './dlq-replay';
import type { DeadLetterRow } from '../../core/http/routes/deadletter';
import { walkDeadLetters, type DlqFilters } from './dlq-walk';

// `howk dlq list | replay`, over GET /deadletter and POST /deadletter/:id/replay.

const filterOptions = (c: Command): Command =>
  c
    .requiredOption('--config-id <id>', 'config id')
    .option('--reason <type>', 'only this reason_type (exhausted, unrecoverable, ...)')
    .option('--since <time>', 'dead at or after (ISO date, unix ms, or a duration ago: 2h)', timeArg)
    .option('--until <time>', 'dead at or before', timeArg);

type FilterFlags = { configId: string; reason?: string; since?: number; until?: number };
const filtersOf = (o: FilterFlags): DlqFilters => ({ config: o.configId, reason: o.reason, since: o.since, until: o.until });

export const registerDlq = (program: Command, globals: () => GlobalOpts): void => {
  const dlq = program.command('dlq').description('Dead letters (GET /deadletter, POST /deadletter/:id/replay)');
  filterOptions(dlq.command('list').description('Dead letters of a config, oldest first'))
    .option('--limit <n>', 'most rows', intArg(1, 100_000), 50)
    .option('--cursor <cursor>', 'next_cursor of a previous listing')
    .action(async (o: FilterFlags & { limit: number; cursor?: string }) => {
      const items: DeadLetterRow[] = [];
      let next: string | null = null;
      // Each page asks for what is left, so the limit falls on a page end and its cursor is exact.
      await walkDeadLetters(
        apiClient(globals()),
        filtersOf(o),
        o.cursor,
        () => Math.min(500, o.limit - items.length),
        async (rows, n) => {
          items.push(...rows);
          next = n;
          return items.length < o.limit;
        },
      );
      if (globals().json) return printJson({ items, count: items.length, next_cursor: next });
      out(
        table(
          ['webhook_id', 'reason_type', 'dead_at', 'attempts', 'endpoint'],
          items.map((d) => [d.webhook_id, d.reason_type, d.dead_at, d.webhook?.attempt, d.webhook?.endpoint]),
        ),
      );
      out(next ? `more: --cursor ${next}` : `${items.length} dead letter(s)`);
    });
  filterOptions(dlq.command('replay').description('Replay dead letters as new webhooks (replay_of the dead one); resumable'))
    .option('--dry-run', 'list what would be replayed, replay nothing')
    .option('--resume-file <file>', 'where progress is kept: a run killed midway continues from it, replaying nothing twice')
    .option('--concurrency <n>', 'replays in flight at once', intArg(1, 64), 8)
    .option('--max <n>', 'replay at most this many', intArg(1, 10_000_000))
    .action(async (o: FilterFlags & ReplayOpts) => {
      await replayDeadLetters(apiClient(globals()), filtersOf(o), o, globals().json ?? false);
    });
};
