import type { Config } from '../config/schema';
import type { GuardParams } from '../ports/guards';

/** Shortest in-flight lease: renewed every third of it (at least 1 s apart), it must outlast two renewal rounds. */
export const MIN_INFLIGHT_LEASE_MS = 3000;

export const guardParams = (c: Config): GuardParams => ({
  circuit: { ...c.circuit_breaker },
  maxInflightPerEndpoint: c.concurrency.max_inflight_per_endpoint,
  maxInflightPerDomain: (host) => c.concurrency.domain_overrides[host] ?? c.concurrency.max_inflight_per_domain,
  limits: {
    initial: c.concurrency.initial_limit,
    floor: c.concurrency.min_limit,
    ceiling: c.concurrency.max_limit,
    tolerance: c.concurrency.latency_tolerance,
    slowThresholdMs: c.concurrency.slow_threshold,
    windowMs: c.concurrency.latency_window,
  },
  inflightLeaseMs: Math.max(MIN_INFLIGHT_LEASE_MS, c.concurrency.inflight_ttl),
  rate: c.rate_limit.rate,
  burst: c.rate_limit.burst,
  circuitTtlMs: c.ttl.circuit_state_ttl,
  requireCanary: c.reconciler.enabled,
});
