import type { Lane, Webhook } from '../domain/webhook';
import { limitSample } from '../policy/adaptive-limit';
import { circuitOutcome, classify } from '../policy/classify';
import { decide } from '../policy/retry';
import type { PipelineEvents } from '../metrics/events';
import type { Admission, PauseScope } from '../ports/guards';
import type { DeliveryResponse } from '../ports/sender';
import { createAdmission, type AdmissionDeps } from './admission';
import { createThrottle } from './endpoint-throttle';
import type { Attempted } from './outcome-records';
import { endAttemptSpan, startAttemptSpan } from './attempt-span';
import type { TraceSpan, Tracing } from '../ports/tracing';
import { createPreparer, type NotPrepared, type PrepareDeps } from './prepare';
import { createSignSend, type SignSendDeps } from './sign-send';

/** What happened to one webhook in one pass. Only 'attempted' spends (or defers) an attempt. */
export type Step =
  | { kind: 'attempted'; o: Attempted }
  | { kind: 'parked'; webhook: Webhook; until: number; reason: 'circuit_open' | 'rate_limited' | 'paused'; at: number }
  | { kind: 'diverted'; webhook: Webhook; at: number }
  | { kind: 'returned'; webhook: Webhook; at: number }
  | { kind: 'held'; webhook: Webhook; at: number }
  /** Made already (consumed again): nothing is sent or written (core/pipeline/known-passes.ts). */
  | { kind: 'known'; webhook: Webhook; at: number };

/**
 * A webhook that met a pause at admission: not a step yet. Its deliverer makes it recoverable
 * (its howk.state snapshot) and then asks the guards to hold it (`hold`); a pause that ended
 * or drained meanwhile sends it back to admission with `pass`.
 */
export type PauseMet = { kind: 'pause_met'; webhook: Webhook; scope: PauseScope['kind'] };

/** A copy whose delivery is still on its way from another worker until `until` (Admission 'elsewhere'): not a step yet. */
export type Elsewhere = { kind: 'elsewhere'; webhook: Webhook; until: number };

/** A copy's pass looked up again on its own (KnownPasses.recheck): a step when it was made elsewhere. */
export type CopyCheck = { recheck: (w: Webhook) => Promise<Step | undefined> };

/** What one pass of a webhook is attempted with. */
export type AttemptInput = {
  webhook: Webhook;
  lane: Lane;
  /** The webhook after it in its config lane, if any: its admission is asked ahead. */
  next?: Webhook;
  /** When its batch was fetched (the admitted stage's timing). */
  fetchedAt?: number;
  /** On a webhook back from a pause: the pauses whose drain released it. */
  pass?: readonly PauseScope['kind'][];
  /** When another worker may still be sending it. */
  copy?: CopyCheck;
};

export type AttemptDeps = AdmissionDeps &
  PrepareDeps &
  SignSendDeps & {
    /** A Svix endpoint's own rate limit (core/apps/endpoint-rules.ts), taken from the guards before admission. */
    endpointThrottle?: (w: Webhook) => { endpointId: string; rate: number } | undefined;
    random?: () => number;
    /** Attempts, retries, deferrals and dead letters counted (core/metrics/events.ts). */
    events?: PipelineEvents;
    /** A span per attempt, in the webhook's trace (core/ports/tracing.ts); none without it. */
    tracing?: Tracing;
  };

const WHAT_FAILED = {
  secret: 'secret template not resolved',
  credential: 'credential not allowed for this destination',
  endpoint: 'endpoint disabled or deleted',
  script: 'delivery script failed',
};

type Go = Extract<Admission, { kind: 'go' }>;
type AttemptedStep = Extract<Step, { kind: 'attempted' }>;

/**
 * One pass of a webhook as stages: throttle, admit, prepare, sign and send, decide. Each
 * stage returns what the next one takes; a park, a divert or a pause is a returned value.
 */
export const createAttempter = (d: AttemptDeps) => {
  const { config } = d;
  const rand = d.random ?? Math.random;
  const admission = createAdmission(d);
  const { record } = admission;
  // A throttleRate parks the webhook (no attempt spent) until its endpoint's own bucket has a
  // token (one second's worth may be saved up); before admission, so it holds no lease.
  const throttle = createThrottle({ ...d, outage: admission.outage, rates: admission.rates });
  const prepare = createPreparer(d);
  const signSend = createSignSend(d);

  /** Decide: the response classified, the guards told, the next step chosen. */
  const decideOn = (w: Webhook, host: string, a: Go, response: DeliveryResponse, retryOn: readonly number[]): AttemptedStep => {
    const at = d.clock.now();
    const c = classify(
      response.kind === 'response' ? { kind: 'response', status: response.status, retryAfter: response.retryAfter } : { kind: response.kind, error: response.error },
      at,
      retryOn,
    );
    const error = response.kind === 'response' ? (response.status >= 400 ? `HTTP ${response.status}` : undefined) : `${response.kind}: ${response.error}`;
    const outcome = circuitOutcome(c);
    record({ id: w.id, endpointHash: w.endpoint_hash, host, now: at, outcome, probe: a.probe, counted: a.counted, error, sample: limitSample(response, outcome) });
    const cap = d.endpointPolicy?.(w)?.maxBackoffMs;
    const decision = decide(w, c, at, cap === undefined ? config.retry : { ...config.retry, max_delay: cap }, rand());
    if (decision.kind === 'delivered' && d.stages) {
      const created = Date.parse(w.created_at);
      if (!Number.isNaN(created)) d.stages.delivered(at - created, w.attempt + w.deferrals > 0);
    }
    return { kind: 'attempted', o: { webhook: w, response, at, decision } };
  };

  /** Nothing could be sent: dead-lettered at once, the endpoint's leases ended without a circuit outcome. */
  const notSent = (w: Webhook, host: string, a: Go, p: NotPrepared, started: number): AttemptedStep => {
    const at = d.clock.now();
    record({ id: w.id, endpointHash: w.endpoint_hash, host, now: at, outcome: 'neutral', probe: a.probe, counted: a.counted, error: p.failed });
    const what = WHAT_FAILED[p.kind ?? 'script'];
    d.log.warn(`${what}; dead-lettered`, { webhook_id: w.id, config_id: w.config_id, reason_type: p.failed, error: p.message });
    const response = { kind: p.kind ?? 'script', error: `${p.failed}: ${p.message}`, durationMs: at - started } as const;
    return { kind: 'attempted', o: { webhook: w, response, at, decision: { kind: 'dead', reason_type: p.failed, reason: `${what}: ${p.message}` } } };
  };

  const deliverAdmitted = async (w: Webhook, host: string, a: Go, now: number, span?: TraceSpan): Promise<AttemptedStep> => {
    const started = d.clock.now();
    let ready = prepare(w, host);
    if (ready instanceof Promise) ready = await ready;
    if ('failed' in ready) return notSent(w, host, a, ready, started);
    const response = await signSend(w, ready.p, ready.target, now, d.tracing?.outbound ? span?.traceparent : undefined);
    return decideOn(w, host, a, response, ready.p.retryOn);
  };

  // Not async: a step known at once (a park) or the delivery's own promise, not one more around it.
  const attemptAdmitted = (w: Webhook, host: string, a: Admission, lane: Lane, fetchedAt?: number): Step | PauseMet | Elsewhere | Promise<Step> => {
    const now = d.clock.now();
    if (a.kind === 'paused') return { kind: 'pause_met', webhook: w, scope: a.scope };
    if (a.kind === 'elsewhere') return { kind: 'elsewhere', webhook: w, until: a.until };
    if (a.kind === 'park') return { kind: 'parked', webhook: w, until: a.until, reason: a.reason, at: now };
    if (a.kind === 'divert') return { kind: 'diverted', webhook: w, at: now };
    if (a.kind === 'recovered') return { kind: 'returned', webhook: w, at: now };
    if (a.kind !== 'go') throw new Error(`unexpected admission ${a.kind}`);
    if (fetchedAt !== undefined) d.stages?.stage('admitted', now - fetchedAt);
    const span = startAttemptSpan(d.tracing, w, lane);
    const step = deliverAdmitted(w, host, a, now, span);
    if (!span) return step;
    return step.then((s) => {
      endAttemptSpan(span, s.o);
      return s;
    });
  };

  /**
   * One pass of a webhook (AttemptInput says what it carries). A copy let through is looked up
   * once more before it is sent: the other worker's delivery may have ended between its
   * batch's lookup and this admission, its lease gone and its sent mark written
   * (docs/RELIABILITY.md, "A copy on the wire elsewhere").
   */
  const attempt = async ({ webhook: w, lane, next, fetchedAt, pass, copy }: AttemptInput): Promise<Step | PauseMet | Elsewhere> => {
    // Once through the throttle: a webhook back from a pause that ended has its token.
    const throttled = pass ? undefined : await throttle(w);
    // An admission asked ahead for it gives back its connection slot and leases.
    if (throttled) return (admission.discard(w), throttled);
    const host = admission.hostOf(w);
    const { a, release } = await admission.admit(w, lane, pass, copy !== undefined);
    // Not after a probe: the next admission must see how the probe went.
    if (next && lane === 'fast' && a.kind === 'go' && !a.probe) admission.askAhead(next, lane);
    try {
      // Only when the guards answered: a local decision (Redis away) asked nothing, and a look-up would wait for Redis too.
      const made = copy && a.kind === 'go' && admission.leased(w) ? await copy.recheck(w) : undefined;
      if (made) {
        admission.abandon(w, a); // its leases end now, no circuit outcome
        return made;
      }
      const step = attemptAdmitted(w, host, a, lane, fetchedAt);
      return step instanceof Promise ? await step : step;
    } catch (e) {
      admission.abandon(w, a);
      throw e;
    } finally {
      release();
    }
  };

  /** Holds a webhook that met a pause (after its snapshot is durable): a step, or the pause to pass on a new admission. */
  const hold = async (m: PauseMet): Promise<Step | { pass: PauseScope['kind'] } | undefined> => {
    const held = await admission.hold(m.webhook, m.scope);
    if (held === 'held') return { kind: 'held', webhook: m.webhook, at: d.clock.now() };
    return held === 'released' ? { pass: m.scope } : undefined;
  };

  return { attempt, hold, discard: admission.discard, settle: admission.settle, guardsAway: admission.outage.isDown };
};
