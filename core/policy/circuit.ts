// The per-endpoint circuit breaker as a pure state machine over (state, now). The Redis
// Lua scripts (workers/redis/commands/admitDelivery.lua, completeDelivery.lua) implement the
// same transitions atomically; the guard contract tests hold both to this behaviour.
//
// CLOSED --failure_threshold failures within failure_window--> OPEN (until now+recovery_timeout)
// OPEN --time passes--> HALF_OPEN: one probe per probe_interval across all workers
// HALF_OPEN --probe success x success_threshold--> CLOSED
// HALF_OPEN --probe failure--> OPEN (until now+probe_interval: probes keep their cadence)

export type CircuitParams = {
  failure_threshold: number;
  failure_window: number;
  recovery_timeout: number;
  probe_interval: number;
  success_threshold: number;
};

export type CircuitState = 'CLOSED' | 'OPEN' | 'HALF_OPEN';

export type Circuit = {
  state: CircuitState;
  failures: number;
  window_start: number;
  open_until: number;
  successes: number;
  probe_at: number;
  opened_count: number;
};

export const closedCircuit = (): Circuit => ({ state: 'CLOSED', failures: 0, window_start: 0, open_until: 0, successes: 0, probe_at: 0, opened_count: 0 });

export type CircuitAdmission = { allowed: true; probe: boolean } | { allowed: false; until: number };

/** May a delivery go now? Mutates `c` (the admitted probe is recorded). */
export const admitCircuit = (c: Circuit, now: number, p: CircuitParams): CircuitAdmission => {
  if (c.state === 'CLOSED') return { allowed: true, probe: false };
  if (c.state === 'OPEN') {
    if (now < c.open_until) return { allowed: false, until: c.open_until };
    c.state = 'HALF_OPEN';
    c.successes = 0;
    c.probe_at = now;
    return { allowed: true, probe: true };
  }
  if (now >= c.probe_at + p.probe_interval) {
    c.probe_at = now;
    return { allowed: true, probe: true };
  }
  return { allowed: false, until: c.probe_at + p.probe_interval };
};

export type CircuitOutcome = 'success' | 'failure' | 'neutral';

/** Records an attempt's outcome. `probe` says whether the attempt was admitted as a probe. */
export const recordCircuit = (c: Circuit, now: number, outcome: CircuitOutcome, probe: boolean, p: CircuitParams): void => {
  if (outcome === 'neutral') return;
  if (c.state === 'CLOSED') {
    if (outcome === 'success') {
      c.failures = 0;
      return;
    }
    if (now - c.window_start > p.failure_window) {
      c.window_start = now;
      c.failures = 0;
    }
    c.failures++;
    if (c.failures >= p.failure_threshold) {
      c.state = 'OPEN';
      c.open_until = now + p.recovery_timeout;
      c.opened_count++;
    }
    return;
  }
  // A late answer of a non-probe attempt sent before the circuit opened says nothing new.
  if (c.state === 'OPEN' || !probe) return;
  if (outcome === 'failure') {
    c.state = 'OPEN';
    c.open_until = now + p.probe_interval;
    c.successes = 0;
    return;
  }
  c.successes++;
  if (c.successes >= p.success_threshold) {
    Object.assign(c, { ...closedCircuit(), opened_count: c.opened_count });
    return;
  }
  // The next probe may go at once: the endpoint answered.
  c.probe_at = 0;
};
