import type { Context } from 'hono';
import { z } from 'zod';
import { ValidationError } from '../../errors/errors';
import { guardParams } from '../../pipeline/guard-params';
import { resumeAndDrain } from '../../pipeline/pause';
import type { PauseScope } from '../../ports/guards';
import type { ApiDeps } from '../deps';
import { checkConfigId } from '../../domain/config-id';
import { ConfigParam } from '../params';
import type { Route } from '../route';

const checkHash = (h: string): void => {
  if (!/^[0-9a-f]{32}$/.test(h)) throw new ValidationError('endpoint hash must be 32 lowercase hex characters (the endpoint_hash of a webhook)', 'hash');
};

const HashParam = z.object({ hash: z.string().regex(/^[0-9a-f]{32}$/) });
export const EndpointViewSchema = z.object({
  endpoint_hash: z.string(),
  circuit: z.object({ state: z.enum(['CLOSED', 'OPEN', 'HALF_OPEN']), failures: z.number(), open_until: z.number().nullable(), successes: z.number(), opened_count: z.number() }),
  inflight: z.number(),
  paused: z.boolean(),
  draining: z.boolean(),
  parked_while_paused: z.number(),
  last_errors: z.array(z.object({ at: z.string(), error: z.string() })),
  concurrency: z.object({
    limit: z.number().int().describe('Adaptive in-flight limit of the endpoint (what the slow lane paces by)'),
    fast_lane_limit: z.number().int().describe('Its share of the fast lane: min(limit, concurrency.max_inflight_per_endpoint); 0 when the endpoint limit is off'),
    latency_ms: z.object({
      estimate: z.number().nullable().describe('Recent latency (moving average of answers and timeouts)'),
      min: z.number().nullable().describe('Lowest latency seen (drifts slowly towards a lasting change)'),
      p50: z.number().nullable(),
      p90: z.number().nullable(),
      samples: z.number().int().describe('Samples within concurrency.latency_window behind p50/p90'),
    }),
    inflight: z.number().int(),
    queued: z.number().int().describe('Webhooks told to wait at the limit in the fast lane within the last 2 s'),
    slow: z.boolean().describe('At its limit, a slow endpoint is diverted to the slow lane; a fast one waits its turn'),
    slow_reason: z.enum(['latency', 'timeouts']).nullable(),
  }),
});
const PauseResult = z.looseObject({
  paused: z.boolean(),
  released: z.number().optional(),
  drain: z
    .enum(['drained', 'paused', 'running', 'not_paused', 'lost'])
    .optional()
    .describe('resume only: drained (pause over), paused (paused again during the drain), running (another resume drains), not_paused, lost (another drain took over)'),
});

/** Operator routes: circuit state and reset, pause and resume of an endpoint or a config. */
const ops = (d: ApiDeps) => {
  const params = guardParams(d.config);
  const guards = d.guards!;
  const view = async (c: Context, hash: string) => c.json(await guards.endpoint(hash, d.clock.now(), params));
  const pause = async (c: Context, scope: PauseScope) => {
    await guards.pause(scope);
    return c.json({ [scope.kind === 'endpoint' ? 'endpoint_hash' : 'config_id']: scope.id, paused: true });
  };
  const resume = async (c: Context, scope: PauseScope) => {
    const r = await resumeAndDrain(guards, d.producer!, d.config.kafka.topics.pending, scope, () => d.clock.now());
    // `drain`: how this resume ended (a pause that came back during it wins: paused again).
    return c.json({ [scope.kind === 'endpoint' ? 'endpoint_hash' : 'config_id']: scope.id, paused: r.outcome === 'paused', released: r.released, drain: r.outcome });
  };
  return { guards, view, pause, resume };
};

const hash = (c: Context) => {
  const h = c.req.param('hash')!;
  checkHash(h);
  return h;
};
const config = (c: Context) => {
  const id = c.req.param('config')!;
  checkConfigId(id);
  return id;
};

const endpoint = { tag: 'endpoints', access: 'admin', needs: ['guards'], request: { params: HashParam } } as const;
const ofConfig = { tag: 'endpoints', access: 'admin', needs: ['guards'], config: { from: 'param', name: 'config' }, request: { params: ConfigParam } } as const;

export const endpointRoutes: Route[] = [
  {
    ...endpoint,
    access: 'read',
    method: 'get',
    path: '/endpoints/:hash',
    summary: 'Circuit state and counts, adaptive limit, latency, in-flight and queued deliveries, slowness, pause and last errors of one endpoint',
    responses: { '200': { description: 'endpoint', schema: EndpointViewSchema } },
    handler: (d) => {
      const o = ops(d);
      return [(c) => o.view(c, hash(c))];
    },
  },
  {
    ...endpoint,
    method: 'post',
    path: '/endpoints/:hash/circuit/reset',
    summary: "Close the endpoint's circuit now",
    responses: { '200': { description: 'endpoint', schema: EndpointViewSchema } },
    handler: (d) => {
      const o = ops(d);
      return [
        async (c) => {
          const h = hash(c);
          await o.guards.resetCircuit(h);
          return o.view(c, h);
        },
      ];
    },
  },
  {
    ...endpoint,
    method: 'post',
    path: '/endpoints/:hash/pause',
    summary: 'Hold deliveries to the endpoint (nothing is lost)',
    responses: { '200': { description: 'paused', schema: PauseResult } },
    handler: (d) => {
      const o = ops(d);
      return [(c) => o.pause(c, { kind: 'endpoint', id: hash(c) })];
    },
  },
  {
    ...endpoint,
    method: 'post',
    path: '/endpoints/:hash/resume',
    summary: 'Release held deliveries in arrival order',
    responses: { '200': { description: 'resumed', schema: PauseResult } },
    handler: (d) => {
      const o = ops(d);
      return [(c) => o.resume(c, { kind: 'endpoint', id: hash(c) })];
    },
  },
  {
    ...ofConfig,
    method: 'post',
    path: '/configs/:config/pause',
    summary: 'Hold deliveries of every endpoint of the config',
    responses: { '200': { description: 'paused', schema: PauseResult } },
    handler: (d) => {
      const o = ops(d);
      return [(c) => o.pause(c, { kind: 'config', id: config(c) })];
    },
  },
  {
    ...ofConfig,
    method: 'post',
    path: '/configs/:config/resume',
    summary: "Release the config's held deliveries in arrival order",
    responses: { '200': { description: 'resumed', schema: PauseResult } },
    handler: (d) => {
      const o = ops(d);
      return [(c) => o.resume(c, { kind: 'config', id: config(c) })];
    },
  },
];
