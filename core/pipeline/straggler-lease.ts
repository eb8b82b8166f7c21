import { nowNs } from '../domain/time';
import type { Webhook } from '../domain/webhook';
import { errorMessage } from '../errors/errors';
import { encodeWebhook } from '../records/webhook';
import { snapshotValue } from '../records/state';
import type { DeliveryCtx } from './delivery-context';
import type { Leased } from './handoff';
import type { BatchRun } from './lanes';
import { writeLeases } from './lease-keeper';

/**
 * The handoff stage of a batch whose lanes stalled (stragglers.ts): its unfinished webhooks go
 * under a lease in the retry schedule and report to the handoff, so that the batch commits and
 * a slow endpoint does not hold its partition. Resolves once the leases are written.
 */
export const leaseStragglers = async (x: DeliveryCtx, run: BatchRun, all: Promise<void>): Promise<void> => {
  const { d, config } = x;
  const leaseMs = config.delivery.handoff_lease;
  // Synchronously with the check: from here on, these webhooks report to the handoff.
  const now = d.clock.now();
  const rest: Webhook[] = [];
  for (const w of run.hooks) {
    if (run.finished.has(w)) continue;
    // A pass this worker made, or a copy of one an earlier batch runs here, is not leased: the
    // lease would replace the retry its outcome scheduled, and the copy, known, writes nothing
    // to bring it back (known-passes.ts, pin / pinCopy). Its lane skips it.
    if (run.known.pin(w) || (x.copies.earlier(w) && run.known.pinCopy(w, x.copies.oldestRun(w)))) run.finished.add(w);
    else rest.push(w);
  }
  const retries = rest.map((w) => ({ id: w.id, dueAt: now + leaseMs, data: encodeWebhook(w) }));
  // The lease is in Redis; a snapshot of it on howk.state lets a rebuild restore it too.
  // Snapshot first (a flush must never take what howk.state has not got yet).
  const leasedAt = nowNs(now);
  const snapshots = retries.map((r, i) => ({
    topic: x.topics.state,
    key: r.id,
    value: snapshotValue(rest[i]!, { webhook_id: r.id, updated_at_ns: leasedAt }, r.dueAt, r.data),
  }));
  const mine: Leased[] = [];
  const written = x.durably('lease snapshot', () => d.producer.send(snapshots)).then(() => x.durably('lease write', () => writeLeases(d, retries, mine, leaseMs)));
  for (const w of rest) {
    const lease = { id: w.id, leaseDueAt: now + leaseMs, leaseWritten: written };
    mine.push(lease);
    run.leased.set(w, lease);
    x.leases.add(lease);
  }
  x.handoff.taken(rest.length);
  all.catch((e) => d.log.warn('background delivery failed; its lease will re-enqueue it', { error: errorMessage(e) }));
  await written;
};
