import { admitCircuit, recordCircuit } from '../policy/circuit';
import { circuitOutcome, classify, type AttemptResponse } from '../policy/classify';
import { decide, type Decision } from '../policy/retry';
import { takeToken } from '../policy/token-bucket';
import { react } from './subscriber';
import { LAB_EPOCH, type DeliveryRecord, type Flight, type LabState, type SubscriberState } from './state';
import { at, backoffText, dur, pushLine } from './text';
import type { LabAttempt, LabDeadLetter } from './types';

// One worker's path through the real policy functions: admission (circuit, then the token
// bucket, as admitDelivery does), the attempt, classify → circuit record → decide.

const sub = (s: LabState, id: string): SubscriberState => s.subs.find((x) => x.spec.id === id)!;

const park = (s: LabState, d: DeliveryRecord, x: SubscriberState, until: number, reason: 'circuit_open' | 'rate_limited'): void => {
  d.state = 'waiting';
  d.held = reason;
  d.dueAt = until;
  x.stats.parked++;
  const name = x.spec.name;
  pushLine(
    s.log,
    s.now,
    reason === 'circuit_open'
      ? `${d.id} to ${name} parked until ${at(until)}: circuit ${x.circuit.state === 'OPEN' ? 'open' : 'half-open, its probe already out'} (no attempt spent)`
      : `${d.id} to ${name} waits ${dur(until - s.now)} for a rate-limit token (no attempt spent)`,
  );
};

/** Admits and starts `d`, or parks it. */
const start = (s: LabState, d: DeliveryRecord): void => {
  const c = s.config;
  const x = sub(s, d.subscriberId);
  const a = admitCircuit(x.circuit, s.now, c.circuit);
  if (!a.allowed) return park(s, d, x, a.until, 'circuit_open');
  if (c.rateLimit.rate > 0) {
    const t = takeToken(x.bucket, s.now, c.rateLimit.rate, c.rateLimit.burst);
    if (!t.ok) return park(s, d, x, s.now + t.waitMs, 'rate_limited');
  }
  const reaction = react(x.behaviour, c);
  d.state = 'in_flight';
  d.held = null;
  d.dueAt = null;
  d.requests++;
  x.stats.requests++;
  s.flights.push({ id: d.id, seq: ++s.seq.flight, startedAt: s.now, endsAt: s.now + reaction.durationMs, probe: a.probe, reaction });
  if (a.probe) pushLine(s.log, s.now, `${x.spec.name}'s circuit is half-open: ${d.id} attempt ${d.webhook.attempt + 1} goes as the probe`);
};

/** Starts due deliveries, oldest first, while a worker is free; parked ones hold no worker. */
export const dispatch = (s: LabState): void => {
  while (s.flights.length < s.config.workers && s.ready.length) start(s, s.ready.shift()!);
};

const got = (r: AttemptResponse, timeoutMs: number): string => {
  if (r.kind === 'response') return r.status === 429 ? `got 429 with Retry-After ${r.retryAfter} s` : `got ${r.status}`;
  return `timed out after ${dur(timeoutMs)}`;
};

const attemptText = (s: LabState, d: DeliveryRecord, f: Flight, decision: Decision, consumer: string): string => {
  const c = s.config;
  const name = sub(s, d.subscriberId).spec.name;
  const head = `${d.id} attempt ${d.webhook.attempt + 1} to ${name} ${got(f.reaction.response, c.timeoutMs)}`;
  const tail = consumer ? `; ${consumer}` : '';
  if (decision.kind === 'delivered') return `${head}: delivered${tail}`;
  if (decision.kind === 'dead') return `${head}: dead-lettered, ${decision.reason}${tail}`;
  const wait = decision.dueAt - LAB_EPOCH - s.now;
  if (decision.deferred) return `${head}; deferral ${decision.next.deferrals} of ${c.retry.max_deferrals}: next try in exactly ${dur(wait)}, no attempt spent${tail}`;
  const spent =
    f.reaction.response.kind === 'response' && f.reaction.response.status === 429 ? ` (429 deferral budget of ${c.retry.max_deferrals} spent: it counts as a failure)` : '';
  return `${head}${spent}; next try in ${dur(wait)}: ${backoffText(d.webhook.attempt, c.retry)}${tail}`;
};

const circuitText = (x: SubscriberState, before: { state: string; opened: number; successes: number }, s: LabState): string | undefined => {
  const c = x.circuit;
  const name = x.spec.name;
  if (c.opened_count > before.opened)
    return `${name}'s circuit opened after ${s.config.circuit.failure_threshold} failures: its deliveries are parked, not attempted, until ${at(c.open_until)}`;
  if (before.state !== 'HALF_OPEN') return undefined;
  if (c.state === 'OPEN') return `the probe to ${name} failed: circuit open again until ${at(c.open_until)}`;
  if (c.state === 'CLOSED') return `the probe to ${name} succeeded: circuit closed`;
  if (c.successes > before.successes) return `the probe to ${name} succeeded (${c.successes} of ${s.config.circuit.success_threshold}): the next probe may go at once`;
  return undefined;
};

const deadLetterOf = (s: LabState, d: DeliveryRecord, reasonType: string, reason: string): LabDeadLetter =>
  Object.freeze({
    id: d.id,
    eventId: d.eventId,
    subscriberId: d.subscriberId,
    reasonType,
    reason,
    attempts: d.failures,
    deferrals: d.webhook.deferrals,
    requests: d.requests,
    deadAt: s.now,
    replayOf: d.webhook.replay_of ?? null,
    payload: d.webhook.payload,
    history: Object.freeze(d.history.map((h) => Object.freeze({ ...h }))) as LabAttempt[],
  });

/** Keeps the newest `finishedBound` finished deliveries (counters keep counting the rest). */
const trim = (s: LabState): void => {
  let extra = s.deliveries.filter((d) => d.state === 'delivered' || d.state === 'dead').length - s.config.finishedBound;
  if (extra <= 0) return;
  s.deliveries = s.deliveries.filter((d) => {
    if (extra > 0 && (d.state === 'delivered' || d.state === 'dead')) {
      extra--;
      s.byId.delete(d.id);
      return false;
    }
    return true;
  });
};

/** The answer of one attempt arrives (or its timeout fires). */
export const complete = (s: LabState, f: Flight): void => {
  const c = s.config;
  const d = s.byId.get(f.id)!;
  const x = sub(s, d.subscriberId);
  const wall = LAB_EPOCH + s.now;
  const cls = classify(f.reaction.response, wall, []);
  const before = { state: x.circuit.state, opened: x.circuit.opened_count, successes: x.circuit.successes };
  recordCircuit(x.circuit, s.now, circuitOutcome(cls), f.probe, c.circuit);
  // One draw per attempt, as the worker draws rand() for every decision.
  const decision = decide(d.webhook, cls, wall, c.retry, s.rng.next());

  // The consumer's side: it dedupes by webhook id, so a repeat is acknowledged and dropped.
  let consumer = '';
  if (f.reaction.processed) {
    const name = x.spec.name;
    const unanswered = f.reaction.response.kind !== 'response';
    const lost = f.reaction.lost ? ', but its response was lost' : ' after the sender gave up';
    if (x.applied.has(d.id)) {
      x.stats.duplicates++;
      consumer = `${name} had already applied ${d.id}, so it dropped the duplicate${unanswered ? lost : ''}`;
    } else {
      x.applied.add(d.id);
      x.stats.effects++;
      if (unanswered) consumer = `${name} applied the effect${lost}`;
    }
  }

  const text = attemptText(s, d, f, decision, consumer);
  const result: LabAttempt['result'] = decision.kind === 'delivered' ? 'delivered' : decision.kind === 'dead' ? 'dead' : decision.deferred ? 'deferred' : 'retry';
  d.history.push({ attempt: d.webhook.attempt + 1, startedAt: f.startedAt, endedAt: s.now, probe: f.probe, outcome: f.reaction.outcome, result, text });
  if (d.history.length > c.historyBound) d.history.splice(0, d.history.length - c.historyBound);
  pushLine(s.log, s.now, text);
  const circuit = circuitText(x, before, s);
  if (circuit) pushLine(s.log, s.now, circuit);

  if (decision.kind === 'delivered') {
    d.state = 'delivered';
    x.stats.delivered++;
  } else if (decision.kind === 'retry') {
    d.webhook = decision.next;
    d.state = 'waiting';
    d.dueAt = decision.dueAt - LAB_EPOCH;
    d.held = decision.deferred ? 'deferred' : 'retry';
    if (decision.deferred) x.stats.deferred++;
    else {
      d.failures++;
      x.stats.failed++;
    }
  } else {
    d.failures++;
    x.stats.failed++;
    x.stats.deadLettered++;
    d.state = 'dead';
    s.deadLetters.push(deadLetterOf(s, d, decision.reason_type, decision.reason));
  }
  trim(s);
};
