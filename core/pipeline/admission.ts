import type { EndpointPolicy } from '../policy/endpoint-policy';
import type { Config } from '../config/schema';
import { encodeWebhook, type Webhook } from '../records/webhook';
import type { Lane } from '../domain/webhook';
import { urlParts, type UrlParts } from '../domain/memo';
import { errorMessage } from '../errors/errors';
import type { Clock } from '../ports/clock';
import type { Admission, Completion, Guards, PauseScope } from '../ports/guards';
import type { BatchStart } from '../domain/batcher';
import { coalesce, coalesceSends } from './coalesce';
import { guardParams } from './guard-params';
import { createInflightKeeper, type InflightKeeper } from './inflight-keeper';
import type { Logger } from '../ports/logger';
import { createOriginSlots, type OriginSlots } from './origin-slots';
import type { EndpointPacer } from './pacer';
import { sleep } from '../domain/time';
import { admitLocally, createOutageState, type DegradedDeps, type OutageState } from './degraded-admission';
import { createSleepers } from './endpoint-sleepers';
import { createOriginLimits } from './origin-limits';
import { createLocalGuards, type LocalGuards } from './local-guards';
import { createLocalRates, type LocalRates } from './local-rates';

export type AdmissionDeps = {
  config: Config;
  clock: Clock;
  log: Logger;
  guards?: Guards;
  /** The worker's connections per origin, shared by its lanes (one is made when not given). */
  slots?: OriginSlots;
  /** Slow lane: learns each endpoint's pace from the admissions that let it go. */
  pacer?: EndpointPacer;
  /** True once the worker is stopping: waits give up and leave their batch uncommitted. */
  isStopping?: () => boolean;
  /** What the worker knows of the guards without Redis, shared by its lanes (one is made when not given). */
  local?: LocalGuards;
  /** A Svix endpoint's own timeout, backoff cap and concurrency ceiling (core/apps/endpoint-rules.ts), read at each attempt. */
  endpointPolicy?: (w: Webhook) => EndpointPolicy | undefined;
  /**
   * The host's end of the current event-loop turn (Node: setImmediate): the guards calls
   * asked for in one turn leave then, together; without it, after a timer (at least 1 ms).
   */
  afterTurn?: (fire: () => void) => void;
};

/** An admission and the worker's connection slot it holds: a 'go' keeps it until its answer is in. */
export type Admitted = { a: Admission; release: () => void };

const GO: Admission = { kind: 'go', probe: false, counted: { endpoint: false, domain: false } };
/** Longest wait before a webhook told to wait asks again (a local completion of its endpoint wakes it sooner). */
const WAIT_MS = 50;

const originOf = (w: Webhook): UrlParts => urlParts(w.endpoint);

type GuardRequest = Parameters<Guards['admit']>[0][number];

/** Everything one worker's admission keeps, shared by its lanes' calls. */
type AdmissionCtx = {
  d: AdmissionDeps;
  config: Config;
  slots: OriginSlots;
  local: LocalGuards;
  rates: LocalRates;
  outage: OutageState;
  /** Deliveries admitted locally (no Redis lease, no Redis probe slot). */
  admittedLocally: Set<string>;
  /** One coalesced guards call for everything asked at once; none without guards. */
  ask1?: (req: GuardRequest) => Promise<Admission>;
  complete?: { add: (c: Completion) => void; idle: () => Promise<unknown> };
  keeper?: InflightKeeper;
  sleepers: ReturnType<typeof createSleepers>;
  originLimit: ReturnType<typeof createOriginLimits>;
  /** Admissions asked ahead (see askAhead). */
  early: Map<Webhook, Promise<Admitted>>;
};

const admissionContext = (d: AdmissionDeps): AdmissionCtx => {
  const { config } = d;
  const params = guardParams(config);
  const guards = d.guards;
  const dg = config.degraded;
  const rates = createLocalRates();
  // The local buckets start empty at each outage: what Redis let go just before counts.
  const outage = createOutageState(d.clock, d.log, dg.recheck_interval, () => rates.clear());
  const sleepers = createSleepers();
  const start: BatchStart = d.afterTurn ? { defer: d.afterTurn } : 'macrotask';
  // Each completion, once its call is settled, wakes the next webhook waiting at its endpoint.
  const complete = guards
    ? coalesceSends(
        (done: Completion[]) => guards.complete(done, params),
        (done, failed, e) => {
          // One line per failed call, not per completion: an outage fails them by the thousand.
          if (failed && !outage.isDown()) d.log.warn('guard completions not recorded', { error: errorMessage(e), completions: done.length });
          for (const c of done) sleepers.wakeNext(c.endpointHash);
        },
        start,
      )
    : undefined;
  return {
    d,
    config,
    slots: d.slots ?? createOriginSlots(config.delivery.max_conns_per_host, config.concurrency.initial_limit),
    local: d.local ?? createLocalGuards({ perEndpoint: dg.max_inflight_per_endpoint, perHost: dg.max_inflight_per_host }, params.circuit, d.log),
    rates,
    outage,
    admittedLocally: new Set(),
    ask1: guards ? coalesce((reqs: GuardRequest[]) => guards.admit(reqs, params), start) : undefined,
    complete,
    keeper: guards ? createInflightKeeper({ renew: (leases, now) => guards.renew(leases, now, params), clock: d.clock, log: d.log, leaseMs: params.inflightLeaseMs }) : undefined,
    sleepers,
    originLimit: createOriginLimits(),
    early: new Map(),
  };
};

/** Records an attempt's end with the guards, in the background. Fail silent: in-flight leases end on their own and a missed circuit record costs little. */
const recordCompletion = (x: AdmissionCtx, c: Completion): void => {
  x.keeper?.remove(c.id);
  x.local.ended(c.id);
  x.local.outcome(c.endpointHash, c.now, c.outcome, c.probe);
  // A local probe is not Redis's: Redis learns the outcome as any attempt's.
  const wasLocal = x.admittedLocally.delete(c.id);
  x.complete?.add(wasLocal && c.probe ? { ...c, probe: false } : c);
  // Without Redis the completion's call fails late: the next local waiter need not wait for it.
  if (x.outage.isDown()) x.sleepers.wakeNext(c.endpointHash);
};

/** Takes a connection slot of the origin, then asks the guards; the slot is given back unless the answer is 'go'. */
const askGuards = async (x: AdmissionCtx, w: Webhook, lane: Lane, waited: boolean, pass?: readonly PauseScope['kind'][], copy?: boolean): Promise<Admitted> => {
  const { origin, host } = originOf(w);
  const release = x.slots.take(origin) ?? (await x.slots.acquire(origin));
  try {
    const now = x.d.clock.now();
    const req: GuardRequest = { endpointHash: w.endpoint_hash, host, configId: w.config_id, lane, now, id: w.id, waited };
    if (pass?.length) req.passPause = [...pass];
    if (copy) req.copy = true;
    const ceiling = x.d.endpointPolicy?.(w)?.maxConcurrency;
    if (ceiling) req.ceiling = ceiling;
    const a = await x.ask1!(req);
    x.outage.answered();
    x.local.learn(w.endpoint_hash, w.config_id, a, now);
    if (a.kind !== 'go') release();
    else {
      x.keeper?.add({ id: w.id, endpointHash: w.endpoint_hash, host, counted: a.counted }, now);
      x.local.started(w.id, w.endpoint_hash, host);
    }
    if (a.kind === 'go' && a.seen) {
      x.slots.resize(origin, x.originLimit(origin, w.endpoint_hash, a.seen.limit));
      x.d.pacer?.learn(w.endpoint_hash, a.seen.limit, a.seen.latencyMs);
    }
    return { a, release };
  } catch (e) {
    release();
    throw e;
  }
};

/** Ends what a 'go' counted, for a webhook that will not be attempted on it. */
const giveBack = (x: AdmissionCtx, w: Webhook, a: Admission): void => {
  if (a.kind === 'go')
    recordCompletion(x, { id: w.id, endpointHash: w.endpoint_hash, host: originOf(w).host, now: x.d.clock.now(), outcome: 'neutral', probe: a.probe, counted: a.counted });
};

/**
 * Without an answer from the guards: degraded, the next turn decides locally; with the
 * circuit off, fail open; else the circuit fails closed and the webhook waits in its
 * (uncommitted) batch until it can be read again. 'again' asks once more.
 */
const guardsFailed = async (x: AdmissionCtx, w: Webhook, e: unknown): Promise<Admitted | 'again'> => {
  const { config, d } = x;
  if (config.degraded.enabled) {
    if (d.isStopping?.()) throw e;
    x.outage.failed(e);
    return 'again';
  }
  if (!config.circuit_breaker.enabled) {
    d.log.warn('guards unavailable; delivering without limits (fail open)', { error: errorMessage(e) });
    return { a: GO, release: await x.slots.acquire(originOf(w).origin) };
  }
  if (d.isStopping?.()) throw e;
  d.log.warn('circuit unavailable; delivery waits (fail closed)', { error: errorMessage(e) });
  await sleep(500);
  return 'again';
};

/**
 * Admission in front of every attempt: the worker's own connection slot for the origin, then
 * the guards (or, while Redis is away, the local rules); a 'wait' naps in its endpoint's line
 * and asks again. A 'paused' is returned: the caller holds the webhook (or passes the pause on
 * a new admission, `pass`, once its drain released it).
 */
const admitOne = async (x: AdmissionCtx, degraded: DegradedDeps, w: Webhook, lane: Lane, pass?: readonly PauseScope['kind'][], copy?: boolean): Promise<Admitted> => {
  if (!x.ask1) return { a: GO, release: await x.slots.acquire(originOf(w).origin) };
  let asked = x.early.get(w);
  x.early.delete(w);
  let waited = false;
  for (;;) {
    let got: Admitted;
    try {
      const decided = !asked && x.config.degraded.enabled ? await admitLocally(degraded, w, originOf(w), pass ?? [], x.d.endpointPolicy?.(w)?.maxConcurrency ?? undefined) : 'ask';
      if (decided !== 'ask' && decided.a.kind === 'go') x.admittedLocally.add(w.id);
      got = decided !== 'ask' ? decided : await (asked ?? askGuards(x, w, lane, waited, pass, copy));
    } catch (e) {
      const r = await guardsFailed(x, w, e);
      if (r === 'again') {
        asked = undefined;
        continue;
      }
      return r;
    }
    asked = undefined;
    if (got.a.kind !== 'wait') return got;
    waited = true;
    if (x.d.isStopping?.()) throw new Error('worker stopping: a delivery waiting for its turn gives up');
    await x.sleepers.nap(w.endpoint_hash, WAIT_MS);
  }
};

/** The admission stage of a worker, shared by its lanes. */
export const createAdmission = (d: AdmissionDeps) => {
  const x = admissionContext(d);
  const dg = d.config.degraded;
  const rate = { rate: d.config.rate_limit.rate, burst: d.config.rate_limit.burst };
  const degraded: DegradedDeps = {
    local: x.local,
    outage: x.outage,
    slots: x.slots,
    clock: d.clock,
    recheckMs: dg.recheck_interval,
    rate,
    rates: x.rates,
    isStopping: d.isStopping,
    nap: x.sleepers.nap,
  };

  // Admissions asked ahead: while a fast-lane webhook is being signed and sent, the next one
  // of its config lane is already asked for, so the Redis round trip leaves the lane's serial
  // path. Its answer is a decision like any other, made one send earlier: whatever it is, the
  // webhook follows it (in-flight leases, tokens and probe slots it took are not taken twice).
  const askAhead = (w: Webhook, lane: Lane): void => {
    if (!x.ask1 || x.early.has(w) || x.outage.isDown()) return;
    const p = askGuards(x, w, lane, false);
    p.catch(() => {}); // a failure is met again (and handled) when the webhook's turn comes
    x.early.set(w, p);
  };

  /** A webhook asked ahead that will not be attempted now (a stop): gives back what a 'go' counted. */
  const discard = (w: Webhook): void => {
    const p = x.early.get(w);
    if (!p) return;
    x.early.delete(w);
    p.then(
      ({ a, release }) => (release(), giveBack(x, w, a)),
      () => {},
    );
  };

  /** Whether the guards gave `w` in-flight leases (not a local decision while they are away). */
  const leased = (w: Webhook): boolean => x.keeper?.has(w.id) === true;

  return {
    /** `copy`: another worker may still be sending `w` (AdmitRequest.copy). */
    admit: (w: Webhook, lane: Lane, pass?: readonly PauseScope['kind'][], copy?: boolean) => admitOne(x, degraded, w, lane, pass, copy),
    /** Holds a webhook that met a pause in Redis (its snapshot durable first: the caller's). */
    hold: (w: Webhook, scope: PauseScope['kind']) =>
      d.guards!.holdPaused({ kind: scope, id: scope === 'endpoint' ? w.endpoint_hash : w.config_id }, encodeWebhook(w), w.released_by),
    askAhead,
    discard,
    leased,
    /** An attempt that ended without recording its completion (a fault): its leases end now instead of being renewed. */
    abandon: (w: Webhook, a: Admission): void => {
      if (a.kind === 'go' && leased(w)) giveBack(x, w, a);
    },
    record: (c: Completion) => recordCompletion(x, c),
    outage: x.outage,
    rates: x.rates,
    settle: (): Promise<unknown> => x.complete?.idle() ?? Promise.resolve(),
    hostOf: (w: Webhook) => originOf(w).host,
  };
};

export type AdmissionControl = ReturnType<typeof createAdmission>;
