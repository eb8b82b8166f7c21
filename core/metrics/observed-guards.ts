import type { Guards } from '../ports/guards';
import type { TopEndpoints } from './top-n';

/**
 * Guards that tell `endpoints` what admission saw: traffic (a delivery let go), the adaptive
 * limit it went under, circuits opened (a park, a transition) and closed. A wrapper, so that
 * the admission path itself is unchanged; its cost is one Map lookup per admission.
 */
export const observedGuards = (inner: Guards, endpoints: TopEndpoints): Guards => ({
  renew: (leases, now, p) => inner.renew(leases, now, p),
  endpoint: (hash, now, p) => inner.endpoint(hash, now, p),
  resetCircuit: (hash) => inner.resetCircuit(hash),
  pause: (scope) => inner.pause(scope),
  resume: (scope, drain, now, leaseMs) => inner.resume(scope, drain, now, leaseMs),
  holdPaused: (scope, data, releasedBy) => inner.holdPaused(scope, data, releasedBy),
  peekHeld: (scope, limit) => inner.peekHeld(scope, limit),
  takeHeld: (scope, drain, limit, now, leaseMs) => inner.takeHeld(scope, drain, limit, now, leaseMs),
  dropHeld: (scope, drain, n) => inner.dropHeld(scope, drain, n),
  restorePauses: (scopes) => inner.restorePauses(scopes),
  restoreCircuits: (items) => inner.restoreCircuits(items),
  restoreHeld: (scope, items) => inner.restoreHeld(scope, items),
  admit: async (reqs, p) => {
    const out = await inner.admit(reqs, p);
    out.forEach((a, i) => {
      const hash = reqs[i]!.endpointHash;
      if (a.kind === 'go') {
        const e = endpoints.touch(hash, true);
        if (a.seen) e.limit = a.seen.limit;
      } else if (a.kind === 'park' && a.reason === 'circuit_open') {
        const e = endpoints.touch(hash);
        e.openUntil = a.until;
        e.tripped = true;
      }
    });
    return out;
  },
  complete: async (done, p) => {
    const moved = await inner.complete(done, p);
    for (const t of moved) {
      const e = endpoints.touch(t.endpointHash);
      e.tripped = t.state === 'OPEN';
      e.openUntil = t.state === 'OPEN' ? t.openUntil : 0;
    }
    return moved;
  },
});
