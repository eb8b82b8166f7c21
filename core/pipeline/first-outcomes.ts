import { iso } from '../domain/time';
import { errorMessage } from '../errors/errors';
import type { Logger } from '../ports/logger';
import type { FirstOutcome, OutcomeBus } from '../ports/outcome-bus';
import type { Step } from './attempt';
import { responseError } from './outcome-records';

/**
 * The first attempts of awaited webhooks among some steps, by listener. Only a record marked
 * `awaited_by` at its first attempt counts, so a worker whose webhooks nobody waits for does
 * nothing here beyond this scan.
 */
export const firstOutcomes = (steps: readonly Step[]): Map<string, FirstOutcome[]> => {
  const out = new Map<string, FirstOutcome[]>();
  for (const s of steps) {
    if (s.kind !== 'attempted') continue;
    const { webhook: w, response: r, decision } = s.o;
    if (!w.awaited_by || w.attempt + w.deferrals !== 0) continue;
    const o: FirstOutcome = {
      webhook_id: w.id,
      status: decision.kind === 'delivered' ? 'delivered' : decision.kind === 'retry' ? 'retrying' : 'dead_lettered',
      attempts: 1,
      status_code: r.kind === 'response' ? r.status : null,
      error: responseError(r),
      next_retry_at: decision.kind === 'retry' ? iso(decision.dueAt) : null,
      dead_reason: decision.kind === 'dead' ? decision.reason_type : null,
    };
    const list = out.get(w.awaited_by);
    if (list) list.push(o);
    else out.set(w.awaited_by, [o]);
  }
  return out;
};

/** Tells the waiting api instances, once the steps' outcomes are durable: one publish per listener. Never fails the caller. */
export const notifyFirstOutcomes = (bus: OutcomeBus | undefined, steps: readonly Step[], log: Logger): void => {
  if (!bus) return;
  for (const [listener, outcomes] of firstOutcomes(steps)) {
    bus.publish(listener, outcomes).catch((e) => log.debug('first outcome not published; its wait will expire', { error: errorMessage(e) }));
  }
};
