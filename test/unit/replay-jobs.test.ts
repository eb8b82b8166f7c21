import { describe, expect, it } from 'vitest';
import { NotFoundError } from '../../core/errors/errors';
import { createReplayJobs, ReplayJobLimitError, type ReplayJobsDeps } from '../../core/reconcile/replay-jobs';

// Bulk replay jobs on fakes: what each job replays, skips and refuses, and how it stops.

const T0 = Date.parse('2026-01-01T00:00:00Z');
const dead = (id: string, config: string, deadAt = T0 - 1000) => JSON.stringify({ webhook_id: id, config_id: config, dead_at: new Date(deadAt).toISOString(), webhook: {} });

const setup = (records: string[], onReplay?: (id: string, n: number) => void, sleep: ReplayJobsDeps['sleep'] = async () => {}) => {
  const byId = new Map(records.map((r) => [JSON.parse(r).webhook_id as string, r]));
  const replayed: string[] = [];
  const deps: ReplayJobsDeps = {
    redrive: {
      replay: async (id) => {
        if (!byId.has(id)) throw new NotFoundError(`dead letter of webhook ${id}`);
        replayed.push(id);
        onReplay?.(id, replayed.length);
        return { webhook_id: `new-${id}`, status: 'pending', replay_of: id, dropped_headers: [] };
      },
    },
    deadLetters: {
      getDeadLetter: async (id) => byId.get(id) ?? null,
      listDeadLetters: async (q) => {
        const all = records.filter((r) => JSON.parse(r).config_id === q.configId);
        const from = q.cursor ? Number(q.cursor) : 0;
        const items = all.slice(from, from + q.limit);
        return { items, next: from + q.limit < all.length ? String(from + q.limit) : null };
      },
    },
    clock: { now: () => T0 },
    log: {
      debug() {},
      info() {},
      warn() {},
      error() {},
      child() {
        return this;
      },
    } as unknown as ReplayJobsDeps['log'],
    sleep,
  };
  return { jobs: createReplayJobs(deps), replayed, deps };
};

const ended = async (jobs: ReturnType<typeof createReplayJobs>, id: string) => {
  for (let i = 0; i < 1000 && jobs.get(id)!.state === 'running'; i++) await new Promise((r) => setTimeout(r, 1));
  return jobs.get(id)!;
};

describe('bulk replay jobs', () => {
  it('a filter job replays the dead letters of its config that existed at its start, each once', async () => {
    const recs = [dead('a', 'A'), dead('b', 'A'), dead('c', 'B'), dead('d', 'A'), dead('late', 'A', T0 + 5000)];
    const { jobs, replayed } = setup(recs);
    const job = await ended(jobs, jobs.start({ configId: 'A', batchSize: 2, rate: 100 }).job_id);
    expect(replayed).toEqual(['a', 'b', 'd']);
    expect([job.state, job.total, job.replayed]).toEqual(['done', 3, 3]);
    expect(job.replays[0]).toEqual({ original: 'd', webhook_id: 'new-d' });
  });

  it('an id list: named twice is skipped, another config’s or a missing one is not found', async () => {
    const { jobs, replayed } = setup([dead('a', 'A'), dead('b', 'B')]);
    const job = await ended(jobs, jobs.start({ configId: 'A', ids: ['a', 'b', 'a', 'zz'], batchSize: 10, rate: 100 }).job_id);
    expect(replayed).toEqual(['a']);
    expect([job.replayed, job.skipped, job.not_found]).toEqual([1, 1, 2]);
  });

  it('stops after the replay under way', async () => {
    const recs = Array.from({ length: 50 }, (_, i) => dead(`w${i}`, 'A'));
    let stop = () => {};
    const { jobs, replayed } = setup(recs, (_id, n) => n === 3 && stop());
    const id = jobs.start({ configId: 'A', batchSize: 10, rate: 100 }).job_id;
    stop = () => void jobs.stop(id);
    const job = await ended(jobs, id);
    expect([job.state, job.replayed, replayed.length]).toEqual(['stopped', 3, 3]);
  });

  it('runs at most four jobs at once, two of one config', async () => {
    const recs = ['A', 'B', 'C'].flatMap((c) => Array.from({ length: 5 }, (_, i) => dead(`${c}${i}`, c)));
    // Each replay paces the job for 200 ms: the jobs run while the test starts more.
    const { jobs } = setup(recs, undefined, (ms) => new Promise((r) => setTimeout(r, Math.min(ms, 200))));
    const ids = ['A', 'A', 'B', 'B'].map((configId) => jobs.start({ configId, batchSize: 1, rate: 1 }).job_id);
    expect(() => jobs.start({ configId: 'C', batchSize: 1, rate: 1 })).toThrow(ReplayJobLimitError);
    jobs.stop(ids[2]!);
    await ended(jobs, ids[2]!);
    // A has its share running: a free slot is not A's to take, C's job starts.
    expect(() => jobs.start({ configId: 'A', batchSize: 1, rate: 1 })).toThrow(/of config A/);
    const c = jobs.start({ configId: 'C', batchSize: 1, rate: 1 }).job_id;
    expect(jobs.get(c)!.state).toBe('running');
    [...ids, c].forEach((id) => jobs.stop(id));
    await Promise.all([...ids, c].map((id) => ended(jobs, id)));
    expect(jobs.start({ configId: 'A', batchSize: 1, rate: 1 }).state).toBe('running');
  });

  it('waits between the replays it makes only: a thousand unknown ids cost no pause', async () => {
    const pauses: number[] = [];
    const { deps } = setup([dead('a', 'A')], undefined, async (ms) => void pauses.push(ms));
    const jobs = createReplayJobs(deps);
    const ids = [...Array.from({ length: 1000 }, (_, i) => `nope${i}`), 'a', 'a'];
    const job = await ended(jobs, jobs.start({ configId: 'A', ids, batchSize: 10, rate: 1 }).job_id);
    expect([job.state, job.not_found, job.replayed, job.skipped]).toEqual(['done', 1000, 1, 1]);
    expect(pauses).toHaveLength(1);
  });

  it("forgets a config's own oldest finished jobs past its share, never another config's", async () => {
    const { deps } = setup([dead('a', 'A'), dead('b', 'B')]);
    const jobs = createReplayJobs({ ...deps, maxKeptPerConfig: 2 });
    const b = await ended(jobs, jobs.start({ configId: 'B', ids: ['b'], batchSize: 1, rate: 100 }).job_id);
    const a: string[] = [];
    for (let i = 0; i < 5; i++) a.push((await ended(jobs, jobs.start({ configId: 'A', ids: ['a'], batchSize: 1, rate: 100 }).job_id)).job_id);
    expect(jobs.get(b.job_id)?.state).toBe('done');
    expect(a.map((id) => jobs.get(id)?.state ?? 'forgotten')).toEqual(['forgotten', 'forgotten', 'forgotten', 'done', 'done']);
  });
});
