import { errorMessage } from '../errors/errors';
import type { Clock } from '../ports/clock';
import type { HotWriter, RetryEntry, RetrySchedule } from '../ports/hot-state';
import type { Leased } from './handoff';
import type { Logger } from '../ports/logger';

/**
 * Keeps the leases of deliveries still running in the background alive: every third of a
 * lease (at least 1 s) every open lease whose first write is done is moved to now + lease,
 * all in one renewLeases call, so that a short lease (fast recovery after a crash) never runs
 * out under live work. Renewals never overlap (a late one would carry a stale due time), and
 * a lease whose write is still out waits for the next one instead of holding back the rest.
 */
export const createLeaseKeeper = (d: { hot: Pick<RetrySchedule, 'renewLeases'>; clock: Clock; log: Logger; leaseMs: number }) => {
  const open = new Set<Leased>();
  const written = new WeakSet<Leased>();
  let last: Promise<void> = Promise.resolve();
  const move = async (leases: Leased[], to: number, what: string): Promise<void> => {
    if (!leases.length) return;
    try {
      await d.hot.renewLeases(leases.map((l) => ({ id: l.id, from: l.leaseDueAt, to })));
      leases.forEach((l) => (l.leaseDueAt = to));
    } catch (e) {
      d.log.warn(`lease ${what} failed`, { error: errorMessage(e) });
    }
  };
  /** Runs after the renewal or release before it. */
  const serial = (fn: () => Promise<void>): Promise<void> => (last = last.then(fn));
  const renew = () =>
    serial(() =>
      move(
        [...open].filter((l) => written.has(l)),
        d.clock.now() + d.leaseMs,
        'renewal',
      ),
    );
  const timer = setInterval(() => void renew(), Math.max(1000, Math.floor(d.leaseMs / 3)));
  (timer as { unref?: () => void }).unref?.();
  return {
    add: (l: Leased) => {
      open.add(l);
      l.leaseWritten.then(
        () => written.add(l),
        () => {},
      );
    },
    /** The delivery ended: its lease is acked with its outcome, no longer renewed. */
    remove: (l: Leased) => void open.delete(l),
    /**
     * Deliveries given up without an attempt (a graceful stop cut their lane short): their
     * leases come due now, so the scheduler re-enqueues them at its next poll instead of
     * after the lease. Nothing was sent for them, so this makes no duplicate.
     */
    release: (leases: Leased[]): Promise<void> => {
      leases.forEach((l) => open.delete(l));
      if (!leases.length) return Promise.resolve();
      return Promise.all(leases.map((l) => l.leaseWritten)).then(
        () => serial(() => move(leases, d.clock.now(), 'release')),
        () => {},
      );
    },
    renew,
    stop: () => clearInterval(timer),
  };
};

/**
 * Writes handoff leases due `leaseMs` from when Redis takes them, not from when they were made:
 * written late (Redis away), a lease due already would have the scheduler re-enqueue deliveries
 * still running. Their `leaseDueAt` follows, for renewals and acks.
 */
export const writeLeases = async (d: { hot: HotWriter; clock: Clock }, retries: RetryEntry[], leases: Leased[], leaseMs: number): Promise<void> => {
  const at = d.clock.now() + leaseMs;
  await d.hot.apply({ retries: retries.map((r) => ({ ...r, dueAt: at })) });
  for (const l of leases) l.leaseDueAt = at;
};
