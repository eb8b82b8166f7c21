import { errorMessage } from '../errors/errors';
import type { Clock } from '../ports/clock';
import type { RetrySchedule } from '../ports/hot-state';
import type { Leased } from './handoff';
import type { Logger } from '../ports/logger';

/**
 * Keeps the leases of deliveries still running in the background alive: every third of a
 * lease (at least 1 s) each open lease is moved to now + lease, once its first write is
 * done, so that a short lease (fast recovery after a crash) never runs out under live work.
 */
export const createLeaseKeeper = (d: { hot: Pick<RetrySchedule, 'renewLeases'>; clock: Clock; log: Logger; leaseMs: number }) => {
  const open = new Set<Leased>();
  const renew = async (): Promise<void> => {
    const leases = [...open];
    if (!leases.length) return;
    const to = d.clock.now() + d.leaseMs;
    try {
      await Promise.all(leases.map((l) => l.leaseWritten));
      await d.hot.renewLeases(leases.map((l) => ({ id: l.id, from: l.leaseDueAt, to })));
      leases.forEach((l) => (l.leaseDueAt = to));
    } catch (e) {
      d.log.warn('lease renewal failed', { error: errorMessage(e) });
    }
  };
  const timer = setInterval(() => void renew(), Math.max(1000, Math.floor(d.leaseMs / 3)));
  (timer as { unref?: () => void }).unref?.();
  return {
    add: (l: Leased) => void open.add(l),
    /** The delivery ended: its lease is acked with its outcome, no longer renewed. */
    remove: (l: Leased) => void open.delete(l),
    renew,
    stop: () => clearInterval(timer),
  };
};
