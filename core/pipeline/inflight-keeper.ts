import { errorMessage } from '../errors/errors';
import type { Clock } from '../ports/clock';
import type { InflightLease } from '../ports/guards';
import type { Logger } from '../ports/logger';

/**
 * Keeps the in-flight leases of this worker's running deliveries alive. A lease is short
 * (concurrency.inflight_ttl), so that a killed worker's deliveries soon stop counting
 * against their endpoint; a delivery still on its way (a slow endpoint, a send queued for
 * the worker's delivery gate, one asked for ahead, one finishing in the background after
 * its batch committed) must keep counting however long it takes. Every third of a lease
 * (at least 1 s) each lease held for at least that long is moved to now + lease, in one
 * guards call. The timer runs only while leases are held.
 */
export const createInflightKeeper = (d: { renew: (leases: InflightLease[], now: number) => Promise<void>; clock: Clock; log: Logger; leaseMs: number }) => {
  const held = new Map<string, { lease: InflightLease; at: number }>();
  const every = Math.max(1000, Math.floor(d.leaseMs / 3));
  let timer: ReturnType<typeof setInterval> | undefined;

  const renew = async (): Promise<void> => {
    if (!held.size) {
      clearInterval(timer);
      timer = undefined;
      return;
    }
    const now = d.clock.now();
    const due = [...held.values()].filter((h) => now - h.at >= every);
    if (!due.length) return;
    try {
      await d.renew(
        due.map((h) => h.lease),
        now,
      );
      for (const h of due) h.at = now;
    } catch (e) {
      d.log.warn('in-flight lease renewal failed', { error: errorMessage(e) });
    }
  };

  return {
    /** A delivery admitted at `at` holds `lease` until `remove`. */
    add: (lease: InflightLease, at: number): void => {
      if (!lease.counted.endpoint && !lease.counted.domain) return;
      held.set(lease.id, { lease, at });
      if (!timer) {
        timer = setInterval(() => void renew(), every);
        (timer as { unref?: () => void }).unref?.();
      }
    },
    remove: (id: string): void => void held.delete(id),
    has: (id: string): boolean => held.has(id),
    size: () => held.size,
    renew,
  };
};

export type InflightKeeper = ReturnType<typeof createInflightKeeper>;
