import { bool, duration, int, section } from './fields';

// What a worker does while Redis (or the Redis Cluster slot of an endpoint) does not answer
// (docs/RELIABILITY.md, "Redis unreachable: delivery degrades, it does not stop").

export const degradedSection = section({
  enabled: bool(
    true,
    'While Redis is unreachable, workers keep delivering within the local bounds below, the last known circuit states and the pauses of the guards topic; false: deliveries wait for Redis (with circuit_breaker.enabled=false they then go without any limit)',
  ),
  max_inflight_per_endpoint: int(2, 'Most deliveries of one endpoint in flight per worker while Redis is unreachable', { min: 1 }),
  max_inflight_per_host: int(4, 'Most deliveries to one host in flight per worker while Redis is unreachable', { min: 1 }),
  recheck_interval: duration('1s', 'While Redis is unreachable, how often a worker asks it again instead of deciding locally'),
  max_owed_statuses: int(
    50_000,
    'Statuses and stats a worker could not write while Redis was unreachable, kept in memory and written once it answers; past it the oldest are dropped (their outcomes stay on Kafka)',
    { min: 0 },
  ),
});
