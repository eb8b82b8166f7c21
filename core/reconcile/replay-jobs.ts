import { RedriveConflictError, type Redriver } from './redrive';
import { NotFoundError } from '../errors/errors';
import type { Logger } from '../ports/logger';
import type { DeadLetterStore } from '../ports/hot-state';
import type { DeadLetterQuery } from '../ports/recovery';
import type { DeadLetter } from '../records/dead-letter';

// Bulk replay (docs/API.md, Bulk replay): a job replays the dead letters of one config that a
// filter or an id list names, a batch at a time at a bounded rate, until done or stopped.
// Each dead letter is replayed at most once per job: the job remembers what it took, and each
// replay carries the idempotency key `bulk-replay:<job>:<dead id>`, so that even a second
// runner of the same job would get the first replay back instead of a new one.
// Jobs live in the memory of the API process that started them (a restart forgets them).

export type ReplayJobSpec = {
  configId: string;
  /** Exactly these dead letters (those of another config count as not found). */
  ids?: string[];
  /** Otherwise every dead letter of the config (of this reason, from `since` on) that existed when the job started. */
  reasonType?: string;
  since?: number;
  batchSize: number;
  /** Replays per second at most. */
  rate: number;
};

export type ReplayJobState = 'running' | 'stopped' | 'done' | 'failed';

export type ReplayLink = { original: string; webhook_id: string };

export type ReplayJobView = {
  job_id: string;
  config_id: string;
  state: ReplayJobState;
  filter: { ids: number | null; reason_type: string | null; since: string | null };
  batch_size: number;
  rate: number;
  /** Dead letters the job will go through: the ids named, or those the filter found (null while it reads the listing). */
  total: number | null;
  replayed: number;
  /** Already replayed by this job (an id named twice), or a replay that answered duplicate. */
  skipped: number;
  not_found: number;
  failed: number;
  started_at: string;
  finished_at: string | null;
  error: string | null;
  /** The newest replays (at most 100): original dead letter → its new webhook. */
  replays: ReplayLink[];
};

/** More bulk replays running at once than the process, or the config's share of it, allows. HTTP 409. */
export class ReplayJobLimitError extends RedriveConflictError {
  constructor(max: number, configId?: string) {
    super('too_many_jobs', `${max} bulk replays${configId ? ` of config ${configId}` : ''} are running already; stop one or wait for it to finish`);
  }
}

type DeadLetters = Pick<DeadLetterStore, 'listDeadLetters' | 'getDeadLetter'>;

export type ReplayJobsDeps = {
  redrive: Pick<Redriver, 'replay'>;
  deadLetters: DeadLetters;
  clock: { now(): number };
  log: Logger;
  sleep?: (ms: number) => Promise<void>;
  /** Jobs running at once (default 4), of them of one config (default 2), and jobs of one config remembered (default 20). */
  maxRunning?: number;
  maxRunningPerConfig?: number;
  maxKeptPerConfig?: number;
  /** Jobs remembered in all (default 1000): past it, a finished job of the config that keeps most goes. */
  maxKept?: number;
};

const KEEP_LINKS = 100;

type Job = ReplayJobView & { spec: ReplayJobSpec; taken: Set<string>; stop: boolean };

/** Partial: a record of any version may lack any field (an invalid_record one has no config_id). */
const recordOf = (record: string): Partial<Pick<DeadLetter, 'webhook_id' | 'config_id' | 'dead_at'>> => {
  try {
    return JSON.parse(record);
  } catch {
    return {};
  }
};

/** A filter job reads at most this many dead letters (a larger set: another job after it). */
export const MAX_FILTER_IDS = 10_000;

/**
 * The dead letters a filter names, read from the listing first (a batch a call) so that the
 * job knows its total: those that exist when the job starts, oldest first, at most MAX_FILTER_IDS.
 */
const collect = async (d: ReplayJobsDeps, job: Job): Promise<string[]> => {
  const { spec } = job;
  const startedAt = Date.parse(job.started_at);
  const ids: string[] = [];
  let cursor: string | undefined;
  while (!job.stop && ids.length < MAX_FILTER_IDS) {
    const q: DeadLetterQuery = {
      configId: spec.configId,
      limit: Math.min(spec.batchSize, MAX_FILTER_IDS - ids.length),
      ...(spec.reasonType ? { reasonType: spec.reasonType } : {}),
      ...(spec.since !== undefined ? { since: spec.since } : {}),
      ...(cursor ? { cursor } : {}),
    };
    const page = await d.deadLetters.listDeadLetters(q);
    // Oldest first: a dead letter made after the job started (one of its replays failing
    // again, say) ends the set; it is not what the job was asked to replay.
    const rows = page.items.map(recordOf).filter((r) => r.webhook_id && !(r.dead_at && Date.parse(r.dead_at) > startedAt));
    ids.push(...rows.map((r) => r.webhook_id!));
    if (page.next === null || rows.length < page.items.length) break;
    cursor = page.next;
  }
  return ids;
};

/** One dead letter; true when a replay was attempted (what the rate paces: a skip or a miss costs no wait). */
const replayOne = async (d: ReplayJobsDeps, job: Job, id: string): Promise<boolean> => {
  if (job.taken.has(id)) {
    job.skipped++;
    return false;
  }
  job.taken.add(id);
  if (job.spec.ids) {
    const owner = recordOf((await d.deadLetters.getDeadLetter(id)) ?? '{}').config_id;
    if (owner !== job.config_id) {
      job.not_found++;
      return false;
    }
  }
  try {
    const r = await d.redrive.replay(id, { idempotency_key: `bulk-replay:${job.job_id}:${id}` });
    if (r.status === 'duplicate') job.skipped++;
    else {
      job.replayed++;
      job.replays.unshift({ original: id, webhook_id: r.webhook_id });
      job.replays.length = Math.min(job.replays.length, KEEP_LINKS);
    }
  } catch (e) {
    if (e instanceof NotFoundError) {
      job.not_found++;
      return false;
    }
    job.failed++;
    job.error = (e as Error).message;
  }
  return true;
};

const run = async (d: ReplayJobsDeps, sleep: (ms: number) => Promise<void>, job: Job) => {
  try {
    const ids = job.spec.ids ?? (await collect(d, job));
    job.total = ids.length;
    for (const id of ids) {
      if (job.stop) break;
      const t0 = d.clock.now();
      if (!(await replayOne(d, job, id))) continue;
      const wait = 1000 / job.rate - (d.clock.now() - t0);
      if (wait > 0) await sleep(wait);
    }
    job.state = job.stop ? 'stopped' : 'done';
  } catch (e) {
    job.state = 'failed';
    job.error = (e as Error).message;
    d.log.warn('bulk replay failed', { job_id: job.job_id, error: job.error });
  }
  job.finished_at = new Date(d.clock.now()).toISOString();
  d.log.info('bulk replay ended', { job_id: job.job_id, state: job.state, replayed: job.replayed });
};

export const createReplayJobs = (d: ReplayJobsDeps) => {
  const jobs = new Map<string, Job>();
  const sleep = d.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const maxRunning = d.maxRunning ?? 4;
  const maxRunningPerConfig = d.maxRunningPerConfig ?? 2;
  const maxKeptPerConfig = d.maxKeptPerConfig ?? 20;
  const maxKept = d.maxKept ?? 1000;
  const iso = (ms: number) => new Date(ms).toISOString();

  const view = (j: Job): ReplayJobView => {
    const { spec: _s, taken: _t, stop: _x, ...v } = j;
    return { ...v, replays: [...v.replays] };
  };

  const running = (configId?: string) => [...jobs.values()].filter((j) => j.state === 'running' && (!configId || j.config_id === configId)).length;

  const forgetOldest = (configId: string, keep: number) => {
    const own = [...jobs.values()].filter((j) => j.config_id === configId);
    let over = own.length - keep;
    for (const j of own) {
      if (over <= 0) return;
      if (j.state === 'running') continue;
      jobs.delete(j.job_id);
      over--;
    }
  };

  /**
   * Forgets the config's oldest finished jobs past its share: one config's churn never evicts
   * another's. Past the table's own bound (many configs), the config that keeps most gives one up.
   */
  const forget = (configId: string) => {
    forgetOldest(configId, maxKeptPerConfig);
    if (jobs.size <= maxKept) return;
    const kept = new Map<string, number>();
    for (const j of jobs.values()) if (j.state !== 'running') kept.set(j.config_id, (kept.get(j.config_id) ?? 0) + 1);
    const [most, n] = [...kept].reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0]);
    if (n > 0) forgetOldest(most, [...jobs.values()].filter((j) => j.config_id === most).length - 1);
  };

  return {
    start(spec: ReplayJobSpec): ReplayJobView {
      if (running() >= maxRunning) throw new ReplayJobLimitError(maxRunning);
      if (running(spec.configId) >= maxRunningPerConfig) throw new ReplayJobLimitError(maxRunningPerConfig, spec.configId);
      const now = d.clock.now();
      const job: Job = {
        job_id: `rj_${crypto.randomUUID().replaceAll('-', '')}`,
        config_id: spec.configId,
        state: 'running',
        filter: { ids: spec.ids?.length ?? null, reason_type: spec.reasonType ?? null, since: spec.since !== undefined ? iso(spec.since) : null },
        batch_size: spec.batchSize,
        rate: spec.rate,
        total: spec.ids ? spec.ids.length : null,
        replayed: 0,
        skipped: 0,
        not_found: 0,
        failed: 0,
        started_at: iso(now),
        finished_at: null,
        error: null,
        replays: [],
        spec,
        taken: new Set(),
        stop: false,
      };
      jobs.set(job.job_id, job);
      forget(spec.configId);
      d.log.info('bulk replay started', { job_id: job.job_id, config_id: spec.configId, ids: spec.ids?.length ?? null, reason_type: spec.reasonType ?? null });
      void run(d, sleep, job);
      return view(job);
    },
    get(id: string): ReplayJobView | undefined {
      const j = jobs.get(id);
      return j && view(j);
    },
    /** The job's config, for the auth check of a key bound to configs. */
    configOf(id: string): string | null {
      return jobs.get(id)?.config_id ?? null;
    },
    /** Stops after the replay under way; a finished job stays as it ended. */
    stop(id: string): ReplayJobView | undefined {
      const j = jobs.get(id);
      if (!j) return undefined;
      j.stop = true;
      return view(j);
    },
  };
};

export type ReplayJobs = ReturnType<typeof createReplayJobs>;
