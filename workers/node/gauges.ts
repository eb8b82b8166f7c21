import type { Gauges } from '../../core/http/routes/overview';
import type { RetrySchedule } from '../../core/ports/hot-state';

// GET /stats/gauges of howk-api and howk-dev. The retry queue is one ZCARD. In flight, the
// slow lane, consumer lag and open circuits live in the workers, Kafka's group offsets and
// per-endpoint guard keys: reading them here would mean an admin client or a key scan per
// request, so this process says it does not know (null) rather than guess.
export const fleetGauges = async (hot: Pick<RetrySchedule, 'retryCount'>): Promise<Gauges> => ({
  retry_queue: await hot.retryCount(),
  in_flight: null,
  slow_lane: null,
  consumer_lag: null,
  open_circuits: null,
});
