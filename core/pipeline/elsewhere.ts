import type { Webhook } from '../domain/webhook';
import { sleep } from '../domain/time';
import type { Elsewhere, Step } from './attempt';
import type { DeliveryCtx } from './delivery-context';
import { guardParams } from './guard-params';
import type { KnownPasses } from './known-passes';

/** Longest nap of a copy whose delivery is on its way elsewhere before it looks again. */
export const ELSEWHERE_POLL_MS = 100;

/** What of its batch's run a waiting copy asks: what is known, and whether its partition moved. */
type RunView = { known: KnownPasses; lost: (w: Webhook) => boolean };

/**
 * A copy another worker still has on its way (its partition moved while that delivery ran):
 * waits until that worker's in-flight lease is gone, then looks up the pass again. Answered
 * there, the copy is not sent; otherwise (a failure, a worker killed before the answer) it is
 * attempted. A lease is renewed only while its delivery runs, so the wait ends with that
 * delivery (delivery.timeout at most) or, for a killed worker, within one lease; past both it
 * is attempted without asking (docs/RELIABILITY.md, "A copy on the wire elsewhere").
 */
export const afterElsewhere = async (x: DeliveryCtx, run: RunView, w: Webhook, first: Elsewhere, start: number): Promise<Step> => {
  const { d, config } = x;
  const began = d.clock.now();
  const deadline = began + config.delivery.timeout + guardParams(config).inflightLeaseMs;
  let e: Step | Elsewhere = first;
  while (e.kind === 'elsewhere') {
    // Not given up as cut (onCut): it was taken, and its batch must stay uncommitted.
    if (x.state.stopping || run.lost(w)) throw new Error('a copy waiting for its delivery elsewhere gives up: the worker stops or its partition moved');
    await sleep(Math.max(1, Math.min(e.until - d.clock.now(), ELSEWHERE_POLL_MS)));
    const seen = await run.known.recheck(w);
    if (seen) {
      d.log.info('a copy waited for its delivery on another worker, answered there: not sent', { webhook_id: w.id, waited_ms: d.clock.now() - began });
      return seen;
    }
    e = await x.attemptOne({ webhook: w, fetchedAt: start, copy: d.clock.now() < deadline ? run.known : undefined });
  }
  if (e.kind === 'attempted') d.log.info('a copy waited for its delivery on another worker, not answered 2xx there: sent', { webhook_id: w.id, waited_ms: d.clock.now() - began });
  return e;
};
