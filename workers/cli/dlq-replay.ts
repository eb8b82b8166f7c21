import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { SingleBar } from 'cli-progress';
import type { Api } from './api-client';
import { CliError, err, out, printJson, table } from './io';
import type { DeadLetterRow } from '../../core/http/routes/deadletter';
import { walkDeadLetters, type DlqFilters } from './dlq-walk';

// Bulk replay of dead letters (docs/OPERATIONS.md, CLI). Resumable without replaying twice:
// - each replay carries the idempotency key `howk-replay:<run id>:<dead webhook id>`, so asking
//   again within ttl.idempotency_ttl returns the first replay (counted as "already");
// - the resume file keeps the run id, the filters and the cursor after the last finished page,
//   so a killed run starts again from the page it was on, with the same keys;
// - `until` is fixed at the first start (now unless given): replays that die again during
//   the run are new dead letters after it and are not picked up by the same run.

export type ReplayOpts = { dryRun?: boolean; resumeFile?: string; concurrency: number; max?: number };

type Progress = { run_id: string; filters: DlqFilters; cursor: string | null; replayed: number; already: number; failed: number; done: boolean; started_at: string };
type Failure = { webhook_id: string; error: string };

const PAGE = 100;

const load = (file: string | undefined, filters: DlqFilters): Progress => {
  const fresh: Progress = {
    run_id: randomUUID(),
    filters: { ...filters, until: filters.until ?? Date.now() },
    cursor: null,
    replayed: 0,
    already: 0,
    failed: 0,
    done: false,
    started_at: new Date().toISOString(),
  };
  if (!file || !existsSync(file)) return fresh;
  let p: Progress;
  try {
    p = JSON.parse(readFileSync(file, 'utf8')) as Progress;
  } catch (e) {
    throw new CliError(`--resume-file ${file} is not a replay progress file: ${(e as Error).message}`, 2);
  }
  const same = (k: keyof DlqFilters) => filters[k] === undefined || filters[k] === p.filters[k];
  if (!p.run_id || !p.filters || !(['config', 'reason', 'since', 'until'] as const).every(same)) {
    throw new CliError(
      `--resume-file ${file} belongs to another replay (config ${p.filters?.config}, reason ${p.filters?.reason ?? 'any'}): give the same filters or another file`,
      2,
    );
  }
  return p;
};

const save = (file: string | undefined, p: Progress): void => {
  if (!file) return;
  writeFileSync(`${file}.tmp`, JSON.stringify(p));
  renameSync(`${file}.tmp`, file);
};

/** Runs `fn` over `items`, `n` at a time. */
const pool = async <T>(items: T[], n: number, fn: (t: T) => Promise<void>): Promise<void> => {
  let i = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (i < items.length) await fn(items[i++]!);
    }),
  );
};

const count = async (api: Api, p: Progress, max: number): Promise<number> => {
  let n = 0;
  await walkDeadLetters(
    api,
    p.filters,
    p.cursor ?? undefined,
    () => 500,
    async (rows) => {
      n += rows.length;
      return n < max;
    },
  );
  return Math.min(n, max);
};

const dryRun = async (api: Api, p: Progress, max: number, json: boolean): Promise<void> => {
  const rows: DeadLetterRow[] = [];
  await walkDeadLetters(
    api,
    p.filters,
    p.cursor ?? undefined,
    () => Math.min(500, max - rows.length),
    async (r) => {
      rows.push(...r);
      return rows.length < max;
    },
  );
  if (json)
    return printJson({
      dry_run: true,
      count: rows.length,
      items: rows.map((r) => ({ webhook_id: r.webhook_id, reason_type: r.reason_type, dead_at: r.dead_at, endpoint: r.webhook?.endpoint })),
    });
  out(
    table(
      ['webhook_id', 'reason_type', 'dead_at', 'endpoint'],
      rows.map((r) => [r.webhook_id, r.reason_type, r.dead_at, r.webhook?.endpoint]),
    ),
  );
  out(`dry run: ${rows.length} dead letter(s) would be replayed; nothing was sent`);
};

export const replayDeadLetters = async (api: Api, filters: DlqFilters, o: ReplayOpts, json: boolean): Promise<void> => {
  const p = load(o.resumeFile, filters);
  const max = o.max ?? Number.MAX_SAFE_INTEGER;
  if (o.dryRun) return dryRun(api, p, max, json);
  const failures: Failure[] = [];
  if (!p.done) {
    const total = await count(api, p, Math.max(0, max - p.replayed - p.already));
    save(o.resumeFile, p);
    const bar = new SingleBar({ stream: process.stderr, noTTYOutput: true, notTTYSchedule: 500, format: 'replay [{bar}] {value}/{total} dead letters  {eta_formatted} left' });
    bar.start(total, 0);
    let seen = 0;
    try {
      await walkDeadLetters(
        api,
        p.filters,
        p.cursor ?? undefined,
        () => Math.min(PAGE, total - seen),
        async (rows, next) => {
          await pool(rows.slice(0, total - seen), o.concurrency, async (row) => {
            try {
              const r = await api.post<{ status: string }>(`/deadletter/${encodeURIComponent(row.webhook_id)}/replay`, {
                idempotency_key: `howk-replay:${p.run_id}:${row.webhook_id}`,
              });
              if (r.body.status === 'duplicate') p.already++;
              else p.replayed++;
            } catch (e) {
              if (!(e instanceof CliError) || /unreachable/.test(e.message)) throw e;
              failures.push({ webhook_id: row.webhook_id, error: e.message });
              p.failed++;
            }
            bar.increment();
          });
          seen += rows.length;
          p.cursor = next;
          save(o.resumeFile, p);
          return seen < total;
        },
      );
    } finally {
      bar.stop();
    }
    p.done = true;
    save(o.resumeFile, p);
  } else {
    err(`${o.resumeFile}: this replay is complete already (run ${p.run_id}); nothing to do`);
  }
  const summary = { run_id: p.run_id, replayed: p.replayed, already_replayed: p.already, failed: p.failed, failures, resume_file: o.resumeFile ?? null };
  if (json) printJson(summary);
  else {
    out(`replayed ${p.replayed} dead letter(s); ${p.already} already replayed by an earlier start of this run; ${p.failed} failed`);
    for (const f of failures) out(`  ${f.webhook_id}: ${f.error}`);
  }
  if (failures.length) throw new CliError(`${failures.length} replay(s) failed`);
};
