import type { Lane } from '../../core/domain/webhook';
import type { Config } from '../../core/config/schema';
import type { Gauges } from '../../core/ports/gauges';
import type { GuardGauges, Guards } from '../../core/ports/guards';
import type { RetrySchedule } from '../../core/ports/hot-state';
import type { Log } from '../../core/ports/log';
import { laneLagReader, totalLag, within } from './group-lag';

// GET /stats/gauges of howk-api and howk-dev. The retry queue is one ZCARD, read every time.
// Consumer lag and the slow lane are the fast and slow groups' lag (one admin call each);
// open circuits and in flight are counted from the guards' keys (workers/redis/guard-gauges.ts).
// Those are read at most once per CACHE_MS however many consoles ask, each within READ_MS:
// one that fails or takes longer is null, never a guess.

export const GAUGE_CACHE_MS = 3000;
const READ_MS = 2000;

type Slow = Omit<Gauges, 'retry_queue'>;

export type GaugeParts = {
  hot: Pick<RetrySchedule, 'retryCount'>;
  config: Config;
  logStore: Log;
  guards?: Pick<Guards, 'gauges'>;
  now: () => number;
};

const readSlow = async (parts: GaugeParts): Promise<Slow> => {
  const lag = laneLagReader(parts.config.kafka, parts.logStore);
  const lane = (l: Lane) => (lag ? within(async () => totalLag(await lag(l)), READ_MS) : Promise.resolve(null));
  const guards = parts.guards?.gauges?.bind(parts.guards);
  const [consumer_lag, slow_lane, g] = await Promise.all([
    lane('fast'),
    lane('slow'),
    guards ? within(() => guards(parts.now()), READ_MS) : Promise.resolve<GuardGauges | null>(null),
  ]);
  // Without an endpoint limit admission takes no leases: nothing to count from.
  const leased = parts.config.concurrency.max_inflight_per_endpoint > 0;
  return { in_flight: leased ? (g?.inflight ?? null) : null, slow_lane, consumer_lag, open_circuits: g?.openCircuits ?? null };
};

export const createFleetGauges = (parts: GaugeParts): (() => Promise<Gauges>) => {
  let cached: { at: number; value: Promise<Slow> } | undefined;
  return async () => {
    const at = Date.now();
    // The promise is cached, so the requests that arrive while a read runs share it.
    if (!cached || at - cached.at >= GAUGE_CACHE_MS) cached = { at, value: readSlow(parts) };
    const [retry_queue, slow] = await Promise.all([parts.hot.retryCount(), cached.value]);
    return { retry_queue, ...slow };
  };
};
