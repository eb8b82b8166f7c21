import { describe, expect, it } from 'vitest';
import { NotFoundError } from '../../core/errors/errors';
import { createReplayJobs, ReplayJobLimitError, type ReplayJobsDeps } from '../../core/reconcile/replay-jobs';

// Bulk replay jobs on fakes: what each job replays, skips and refuses, and how it stops.

const T0 = Date.parse('2026-01-01T00:00:00Z');
const dead = (id: string, config: string, deadAt = T0 - 1000) => JSON.stringify({ webhook_id: id, config_id: config, dead_at: new Date(deadAt).toISOString(), webhook: {} });

const setup = (records: string[], onReplay?: (id: string, n: number) => void) => {
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
    sleep: async () => {},
  };
  return { jobs: createReplayJobs(deps), replayed };
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

  it('runs at most four jobs at once', async () => {
    const recs = Array.from({ length: 5 }, (_, i) => dead(`w${i}`, 'A'));
    const { jobs } = setup(recs);
    const ids = [1, 2, 3, 4].map(() => jobs.start({ configId: 'A', batchSize: 1, rate: 1 }).job_id);
    expect(() => jobs.start({ configId: 'A', batchSize: 1, rate: 1 })).toThrow(ReplayJobLimitError);
    ids.forEach((id) => jobs.stop(id));
    await Promise.all(ids.map((id) => ended(jobs, id)));
    expect(jobs.start({ configId: 'A', batchSize: 1, rate: 1 }).state).toBe('running');
  });
});
