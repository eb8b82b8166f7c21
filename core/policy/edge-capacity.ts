import type { CircuitParams } from './circuit';
import { allowed, type LimitState } from './adaptive-limit';

// The capacity of a destination as the edge's DomainGate sees it, read from the keys where
// the fleet's guards keep it (admitDelivery.lua, completeDelivery.lua): the adaptive limit
// and latency of the host and of each endpoint, the endpoint's circuit, and how many of its
// webhooks wait at its limit. The gate admits to the fast lane at the rate this capacity
// sustains (limit / latency, Little's law), sends the rest to the slow lane, and parks
// webhooks of an open circuit in the retry schedule, as the worker would on their arrival.

export type CircuitView = { state: 'CLOSED' | 'OPEN' | 'HALF_OPEN'; openUntil: number; probeAt: number };

export type EndpointCapacity = { limit: LimitState | null; circuit: CircuitView; queued: number };

export type HostCapacity = { domain: LimitState | null; endpoints: Record<string, EndpointCapacity> };

/** The fields of a limit hash, as HMGET limit min lat timeout_at answers them. */
export const LIMIT_FIELDS = ['limit', 'min', 'lat', 'timeout_at'] as const;
/** The fields of a circuit hash, as HMGET state open_until probe_at answers them. */
export const CIRCUIT_FIELDS = ['state', 'open_until', 'probe_at'] as const;

const num = (v: string | null | undefined): number => {
  const n = Number(v ?? 0);
  return Number.isFinite(n) ? n : 0;
};

/** A limit hash → its state; null when never measured. */
export const parseLimit = (f: readonly (string | null)[]): LimitState | null =>
  f[0] === null || f[0] === undefined ? null : { limit: num(f[0]), minMs: num(f[1]), latMs: num(f[2]), timeoutAt: num(f[3]) };

export const parseCircuit = (f: readonly (string | null)[]): CircuitView => {
  const s = f[0];
  return { state: s === 'OPEN' || s === 'HALF_OPEN' ? s : 'CLOSED', openUntil: num(f[1]), probeAt: num(f[2]) };
};

/** Until when a webhook of this circuit is parked, or null when it may go (admitDelivery's park rule). */
export const parkedUntil = (c: CircuitView, now: number, p: Pick<CircuitParams, 'probe_interval'>): number | null => {
  if (c.state === 'OPEN' && now < c.openUntil) return c.openUntil;
  if (c.state === 'HALF_OPEN' && now < c.probeAt + p.probe_interval) return c.probeAt + p.probe_interval;
  return null;
};

export type SustainedRate = { rate: number; burst: number };

/**
 * The fast-lane admission a measured limit sustains: `allowed(limit)` deliveries in flight,
 * each taking the latency estimate, so limit × 1000 / latency per second, with a burst of
 * one limit's worth. Null until a latency was measured.
 */
export const sustained = (s: LimitState | null): SustainedRate | null => {
  if (!s || s.latMs <= 0) return null;
  const n = allowed(s);
  return { rate: (n * 1000) / s.latMs, burst: n };
};

/** A fast lane already holding a limit's worth of waiting webhooks takes no more from the edge. */
export const backlogged = (e: EndpointCapacity | undefined): boolean => !!e && e.queued > 0 && e.queued >= (e.limit ? allowed(e.limit) : 1);
