import { z } from 'zod';
import { STAT_NAMES } from '../../ports/hot-state';
import { TIMELINE_WINDOWS, type TimelineWindow } from '../../domain/timeline';
import { ValidationError } from '../../errors/errors';
import type { Gauges } from '../../ports/gauges';
import type { Route } from '../route';

// GET /stats/timeline and GET /stats/gauges: what the console's Overview draws (docs/CONSOLE.md,
// Overview). Counters come from the hot state; a gauge this process cannot read cheaply is
// null ("not available from this process"), never an estimate.

const Bucket = z.object({ start: z.string().describe('Start of the bucket (ISO 8601, UTC)'), ...Object.fromEntries(STAT_NAMES.map((n) => [n, z.number().int()])) });
const TimelineSchema = z.object({
  window: z.enum(['1h', '24h']),
  bucket_seconds: z.number().int().describe('60 for 1h, 900 for 24h'),
  buckets: z.array(Bucket).describe('Oldest first; the last is the bucket under way'),
});

const gauge = (what: string) => z.number().int().nullable().describe(`${what}; null: not available from this process`);
export const GaugesSchema = z.object({
  retry_queue: gauge('Webhooks scheduled for a later attempt'),
  in_flight: gauge('Deliveries under way'),
  slow_lane: gauge('Webhooks waiting in the slow lane'),
  consumer_lag: gauge('Records the workers have yet to read'),
  open_circuits: gauge('Endpoints whose circuit is open'),
}) satisfies z.ZodType<Gauges>;

const TimelineQuery = () => z.object({ window: z.enum(['1h', '24h']).optional().describe('1h: 60 one-minute buckets (default); 24h: 96 quarter-hour buckets') });

export const overviewRoutes: Route[] = [
  {
    method: 'get',
    path: '/stats/timeline',
    tag: 'webhooks',
    summary: 'Enqueued, delivered, failed, dead-lettered… per minute over the last hour, or per quarter hour over the last day',
    access: 'read',
    needs: ['overview'],
    request: { query: TimelineQuery },
    responses: { '200': { description: 'timeline', schema: TimelineSchema } },
    handler: (d) => [
      async (c) => {
        const w = c.req.query('window') ?? '1h';
        if (!TIMELINE_WINDOWS.includes(w as TimelineWindow)) throw new ValidationError('window must be 1h or 24h', 'window');
        return c.json(await d.overview!.timeline(d.clock.now(), w as TimelineWindow));
      },
    ],
  },
  {
    method: 'get',
    path: '/stats/gauges',
    tag: 'webhooks',
    summary: 'Retry queue depth, in flight, slow lane, consumer lag and open circuits, as far as this process can tell',
    access: 'read',
    needs: ['overview'],
    responses: { '200': { description: 'gauges', schema: GaugesSchema } },
    handler: (d) => [async (c) => c.json(await d.overview!.gauges())],
  },
];
