import { backlogged, parkedUntil, sustained, type HostCapacity } from '../../core/policy/edge-capacity';
import type { Config } from '../../core/config/schema';
import { admissionOf, type EdgeSettings } from '../config';
import type { BucketStore } from './buckets';
import type { RouteChoice } from './protocol';

// The route of one webhook at its host's gate (the fast lane, the slow lane or parked), from the capacity the fleet measured:
// 1. its endpoint's circuit is open (or half-open between probes): parked until it lets a
//    probe through (`canPark: false`, a multi-host reservation: the slow lane, where the
//    worker parks it on arrival);
// 2. its endpoint already has a limit's worth waiting in the fast lane: the slow lane;
// 3. the fast lane while the host's (and the endpoint's) bucket has a token, refilled at
//    the rate the measured limit sustains; the slow lane past it. A host the fleet has not
//    measured yet is admitted at the configured rate (edge.admission_rate, domain_rates).

export type RouteInputs = {
  cap: HostCapacity;
  host: string;
  endpointHash: string | undefined;
  now: number;
  edge: EdgeSettings;
  circuit: Config['circuit_breaker'];
  buckets: BucketStore;
  canPark: boolean;
};

export const chooseRoute = (i: RouteInputs): RouteChoice => {
  const e = i.endpointHash === undefined ? undefined : i.cap.endpoints[i.endpointHash];
  if (e && i.circuit.enabled) {
    const until = parkedUntil(e.circuit, i.now, i.circuit);
    if (until !== null) return i.canPark ? { route: 'parked', until } : { route: 'slow' };
  }
  if (backlogged(e)) return { route: 'slow' };
  const scopes: { scope: string; rate: number; burst: number }[] = [];
  const domain = sustained(i.cap.domain);
  if (domain) scopes.push({ scope: `domain:${i.host}`, ...domain });
  const endpoint = sustained(e?.limit ?? null);
  if (endpoint) scopes.push({ scope: `endpoint:${i.endpointHash}`, ...endpoint });
  if (!scopes.length) {
    const { rate, burst } = admissionOf(i.edge, i.host);
    if (rate <= 0) return { route: 'pending' };
    scopes.push({ scope: `host:${i.host}`, rate, burst });
  }
  return { route: i.buckets.takeAll(scopes, i.now) ? 'pending' : 'slow' };
};
