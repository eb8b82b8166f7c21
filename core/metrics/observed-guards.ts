import { forwardGuards, type Guards } from '../ports/guards';
import type { TopEndpoints } from './top-n';

/**
 * Guards that tell `endpoints` what admission saw: traffic (a delivery let go), the adaptive
 * limit it went under, circuits opened (a park, a transition) and closed. A wrapper, so that
 * the admission path itself is unchanged; its cost is one Map lookup per admission.
 */
export const observedGuards = (inner: Guards, endpoints: TopEndpoints): Guards => ({
  ...forwardGuards(inner),
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
