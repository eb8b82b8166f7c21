import type { Context } from 'hono';
import { z } from 'zod';
import { NotFoundError, ValidationError } from '../../errors/errors';
import { createReplayJobs, type ReplayJobs } from '../../reconcile/replay-jobs';
import { REASON } from '../../reconcile/listing';
import { CONFIG_ID } from '../../domain/config-id';
import type { ApiDeps } from '../deps';
import { readJsonBody } from '../json-body';
import type { ConfigFrom, Route } from '../route';
import { conflictAware, CONFLICT } from './webhooks';

// Bulk replay of dead letters (core/reconcile/replay-jobs.ts): POST starts a job, GET follows
// it, POST .../stop (or DELETE) stops it. One job table per app, shared by the three routes.

const tables = new WeakMap<ApiDeps, ReplayJobs>();
const jobsOf = (d: ApiDeps): ReplayJobs => {
  let t = tables.get(d);
  if (!t) {
    const limits = d.config.api.bulk_replay;
    t = createReplayJobs({
      redrive: d.redrive!,
      deadLetters: d.listing!,
      clock: d.clock,
      log: d.log,
      maxRunning: limits.max_running,
      maxRunningPerConfig: limits.max_running_per_config,
      maxKeptPerConfig: limits.max_kept_per_config,
    });
    tables.set(d, t);
  }
  return t;
};

export const MAX_REPLAY_IDS = 1000;
export const MAX_REPLAY_BATCH = 500;
export const MAX_REPLAY_RATE = 200;

const StartBody = z
  .object({
    ids: z.array(z.string().min(1).max(64)).min(1).max(MAX_REPLAY_IDS).optional().describe('These dead letters (of the config); left out, the filter below'),
    reason_type: z.string().regex(REASON).optional().describe('Only dead letters of this reason'),
    since: z.iso.datetime().optional().describe('Only dead letters from then on (ISO 8601)'),
    batch_size: z
      .number()
      .int()
      .min(1)
      .max(MAX_REPLAY_BATCH)
      .optional()
      .describe('Filter: dead letters read from the listing a call (default 100); the job reads them all (at most 10,000) before it replays, so that it knows its total'),
    rate: z.number().int().min(1).max(MAX_REPLAY_RATE).optional().describe('Replays per second at most (default 50)'),
  })
  .strict()
  .refine((b) => !(b.ids && (b.reason_type || b.since)), { message: 'give ids or a filter (reason_type, since), not both', path: ['ids'] });

const JobView = z.object({
  job_id: z.string(),
  config_id: z.string(),
  state: z.enum(['running', 'stopped', 'done', 'failed']),
  filter: z.object({ ids: z.number().int().nullable(), reason_type: z.string().nullable(), since: z.string().nullable() }),
  batch_size: z.number().int(),
  rate: z.number().int(),
  total: z.number().int().nullable().describe('The ids given, or the dead letters the filter found (null while it reads the listing)'),
  replayed: z.number().int(),
  skipped: z.number().int().describe('Named twice, or already replayed under this job'),
  not_found: z.number().int(),
  failed: z.number().int(),
  started_at: z.string(),
  finished_at: z.string().nullable(),
  error: z.string().nullable(),
  replays: z.array(z.object({ original: z.string(), webhook_id: z.string() })).describe('The newest 100 replays: dead letter → its new webhook'),
});

const JobParam = z.object({ job: z.string() });
const JOB_OWNER: ConfigFrom = { from: 'owner', name: 'job', owner: async (d, id) => jobsOf(d).configOf(id), notFound: (id) => `bulk replay ${id}` };
const job = { tag: 'deadletter', needs: ['redrive', 'listing'], config: JOB_OWNER, request: { params: JobParam } } as const;

const stopHandler = (d: ApiDeps) => [
  (c: Context) => {
    const v = jobsOf(d).stop(c.req.param('job')!);
    if (!v) throw new NotFoundError(`bulk replay ${c.req.param('job')}`);
    return c.json(v);
  },
];

export const deadLetterReplayRoutes: Route[] = [
  {
    method: 'post',
    path: '/deadletter/replay',
    tag: 'deadletter',
    summary:
      "Bulk replay: a job replaying the config's dead letters (an id list, or those of a reason from a date that exist when it starts, at most 10,000), each at most once, at a bounded rate",
    access: 'admin',
    config: { from: 'query', name: 'config_id' },
    needs: ['redrive', 'listing'],
    request: { query: () => z.object({ config_id: z.string().regex(CONFIG_ID) }), body: () => StartBody },
    responses: { '202': { description: 'started', schema: JobView, headers: { Location: { schema: { type: 'string' } } } }, '409': CONFLICT },
    handler: (d) => [
      (c) =>
        conflictAware(c, async () => {
          const configId = c.req.query('config_id') ?? '';
          if (!CONFIG_ID.test(configId)) throw new ValidationError('config_id must be 1-128 characters of A-Z a-z 0-9 . _ : -', 'config_id');
          const b = await readJsonBody(c, StartBody, { optional: true });
          const v = jobsOf(d).start({
            configId,
            ...(b.ids ? { ids: b.ids } : {}),
            ...(b.reason_type ? { reasonType: b.reason_type } : {}),
            ...(b.since ? { since: Date.parse(b.since) } : {}),
            batchSize: b.batch_size ?? 100,
            rate: b.rate ?? 50,
          });
          c.header('Location', `/deadletter/replay/${v.job_id}`);
          return c.json(v, 202);
        }),
    ],
  },
  {
    ...job,
    method: 'get',
    path: '/deadletter/replay/:job',
    summary: 'Progress of a bulk replay (jobs live in the API process that started them)',
    access: 'read',
    responses: { '200': { description: 'job', schema: JobView } },
    handler: (d) => [
      (c) => {
        const v = jobsOf(d).get(c.req.param('job')!);
        if (!v) throw new NotFoundError(`bulk replay ${c.req.param('job')}`);
        return c.json(v);
      },
    ],
  },
  {
    ...job,
    method: 'post',
    path: '/deadletter/replay/:job/stop',
    summary: 'Stop a bulk replay after the replay under way (a finished job stays as it ended)',
    access: 'admin',
    responses: { '200': { description: 'job', schema: JobView } },
    handler: stopHandler,
  },
  {
    ...job,
    method: 'delete',
    path: '/deadletter/replay/:job',
    summary: 'Same as POST /deadletter/replay/:job/stop',
    access: 'admin',
    responses: { '200': { description: 'job', schema: JobView } },
    handler: stopHandler,
  },
];
