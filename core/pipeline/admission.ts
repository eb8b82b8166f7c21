import type { EndpointPolicy } from '../policy/endpoint-policy';
import type { Config } from '../config/schema';
import { encodeWebhook, type Webhook } from '../records/webhook';
import { urlParts, type UrlParts } from '../domain/memo';
import { errorMessage } from '../errors/errors';
import type { Clock } from '../ports/clock';
import type { Admission, Completion, Guards, PauseScope } from '../ports/guards';
import { coalesce, coalesceSends } from './coalesce';
import { guardParams } from './guard-params';
import { createInflightKeeper } from './inflight-keeper';
import type { Logger } from '../ports/logger';
import { createOriginSlots, type OriginSlots } from './origin-slots';
import type { EndpointPacer } from './pacer';
import { sleep } from '../domain/time';
import { admitLocally, createOutageState } from './degraded-admission';
import { createLocalGuards, type LocalGuards } from './local-guards';
import { createLocalRates } from './local-rates';

export type Lane = 'fast' | 'slow';

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
  /** Makes a webhook that met a pause recoverable (its howk.state snapshot) before the pause holds it in Redis. */
  beforeHold?: (w: Webhook) => Promise<void>;
  /** What the worker knows of the guards without Redis, shared by its lanes (one is made when not given). */
  local?: LocalGuards;
  /** A Svix endpoint's own timeout, backoff cap and concurrency ceiling (core/apps/gate.ts), read at each attempt. */
  endpointPolicy?: (w: Webhook) => EndpointPolicy | undefined;
};

/** An admission and the worker's connection slot it holds: a 'go' keeps it until its answer is in. */
export type Admitted = { a: Admission | { kind: 'held' }; release: () => void };

const GO: Admission = { kind: 'go', probe: false, counted: { endpoint: false, domain: false } };
const NOOP = () => {};
/** Longest wait before a webhook told to wait asks again (a local completion of its endpoint wakes it sooner). */
const WAIT_MS = 50;

const originOf = (w: Webhook): UrlParts => urlParts(w.endpoint);

/**
 * Admission in front of every attempt: the worker's own connection slot for the origin
 * first, then the guards (one coalesced script call for everything asked at once), and
 * the completions that end what admission counted.
 */
export const createAdmission = (d: AdmissionDeps) => {
  const { config } = d;
  const params = guardParams(config);
  const guards = d.guards;
  const slots = d.slots ?? createOriginSlots(config.delivery.max_conns_per_host, config.concurrency.initial_limit);
  const dg = config.degraded;
  const local = d.local ?? createLocalGuards({ perEndpoint: dg.max_inflight_per_endpoint, perHost: dg.max_inflight_per_host }, params.circuit);
  const rates = createLocalRates();
  // The local buckets start empty at each outage: what Redis let go just before counts.
  const outage = createOutageState(d.clock, d.log, dg.recheck_interval, () => rates.clear());
  /** Deliveries admitted locally (no Redis lease, no Redis probe slot). */
  const admittedLocally = new Set<string>();
  const ask1 = guards ? coalesce((reqs: Parameters<Guards['admit']>[0]) => guards.admit(reqs, params)) : undefined;
  // Each completion, once its call is settled, wakes the next webhook waiting at its endpoint.
  const complete = guards
    ? coalesceSends(
        (done: Completion[]) => guards.complete(done, params),
        (done, failed, e) => {
          // One line per failed call, not per completion: an outage fails them by the thousand.
          if (failed && !outage.isDown()) d.log.warn('guard completions not recorded', { error: errorMessage(e), completions: done.length });
          for (const c of done) wakeNext(c.endpointHash);
        },
      )
    : undefined;
  const keeper = guards
    ? createInflightKeeper({ renew: (leases, now) => guards.renew(leases, now, params), clock: d.clock, log: d.log, leaseMs: params.inflightLeaseMs })
    : undefined;

  // Webhooks told to wait at their endpoint's limit sleep in line, per endpoint: each local
  // completion of that endpoint (once it has reached the guards) wakes the first of them,
  // and WAIT_MS wakes anyone (room made by other workers). Waking them all at once made
  // every completion cost one admission per waiter.
  const sleepers = new Map<string, (() => void)[]>();
  const napUntilCompletion = (hash: string, ms: number) =>
    new Promise<void>((resolve) => {
      const line = sleepers.get(hash) ?? [];
      sleepers.set(hash, line);
      const wake = () => {
        clearTimeout(timer);
        const i = line.indexOf(wake);
        if (i >= 0) line.splice(i, 1);
        if (!line.length && sleepers.get(hash) === line) sleepers.delete(hash);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      line.push(wake);
    });
  const wakeNext = (hash: string) => sleepers.get(hash)?.[0]?.();

  /** Records an attempt's end with the guards, in the background. Fail silent: in-flight leases end on their own and a missed circuit record costs little. */
  const record = (c: Completion): void => {
    keeper?.remove(c.id);
    local.ended(c.id);
    local.outcome(c.endpointHash, c.now, c.outcome, c.probe);
    // A local probe is not Redis's: Redis learns the outcome as any attempt's.
    const wasLocal = admittedLocally.delete(c.id);
    complete?.add(wasLocal && c.probe ? { ...c, probe: false } : c);
    // Without Redis the completion's call fails late: the next local waiter need not wait for it.
    if (outage.isDown()) wakeNext(c.endpointHash);
  };

  // The worker's pool for an origin follows the largest limit among its endpoints (up to the
  // pool's size): a slow endpoint with a small limit must not throttle a fast one beside it.
  // The largest is kept with the map and recomputed only when the endpoint that held it
  // lowers its limit or leaves: this runs at every admission.
  const limits = new Map<string, { m: Map<string, number>; max: number }>();
  const originLimit = (origin: string, hash: string, limit: number): number => {
    let o = limits.get(origin);
    if (!o) {
      if (limits.size >= 10_000) limits.delete(limits.keys().next().value as string);
      limits.set(origin, (o = { m: new Map(), max: 0 }));
    }
    const { m } = o;
    const prev = m.get(hash);
    m.delete(hash); // newest last: the oldest endpoint goes first past 100
    m.set(hash, limit);
    let stale = prev === o.max && limit < prev;
    if (m.size > 100) {
      const oldest = m.keys().next().value as string;
      stale ||= m.get(oldest) === o.max;
      m.delete(oldest);
    }
    if (stale) {
      let max = 0;
      for (const v of m.values()) if (v > max) max = v;
      o.max = max;
    } else if (limit > o.max) o.max = limit;
    return o.max;
  };

  /** Takes a connection slot of the origin, then asks; the slot is given back unless the answer is 'go'. */
  const ask = async (w: Webhook, lane: Lane, waited: boolean, passPause?: readonly PauseScope['kind'][]): Promise<{ a: Admission; release: () => void }> => {
    const { origin, host } = originOf(w);
    const release = slots.take(origin) ?? (await slots.acquire(origin));
    try {
      const now = d.clock.now();
      const req: Parameters<Guards['admit']>[0][number] = { endpointHash: w.endpoint_hash, host, configId: w.config_id, lane, now, id: w.id, waited };
      if (passPause?.length) req.passPause = [...passPause];
      const ceiling = d.endpointPolicy?.(w)?.maxConcurrency;
      if (ceiling) req.ceiling = ceiling;
      const a = await ask1!(req);
      outage.answered();
      local.learn(w.endpoint_hash, w.config_id, a, now);
      if (a.kind !== 'go') release();
      else {
        keeper?.add({ id: w.id, endpointHash: w.endpoint_hash, host, counted: a.counted }, now);
        local.started(w.id, w.endpoint_hash, host);
      }
      if (a.kind === 'go' && a.seen) {
        slots.resize(origin, originLimit(origin, w.endpoint_hash, a.seen.limit));
        d.pacer?.learn(w.endpoint_hash, a.seen.limit, a.seen.latencyMs);
      }
      return { a, release };
    } catch (e) {
      release();
      throw e;
    }
  };

  // Admissions asked ahead: while a fast-lane webhook is being signed and sent, the next one
  // of its config lane is already asked for, so the Redis round trip leaves the lane's serial
  // path. Its answer is a decision like any other, made one send earlier: whatever it is, the
  // webhook follows it (in-flight leases, tokens and probe slots it took are not taken twice).
  const early = new Map<Webhook, Promise<{ a: Admission; release: () => void }>>();

  const askAhead = (w: Webhook, lane: Lane): void => {
    if (!ask1 || early.has(w) || outage.isDown()) return;
    const p = ask(w, lane, false);
    p.catch(() => {}); // a failure is met again (and handled) when the webhook's turn comes
    early.set(w, p);
  };

  /** A webhook asked ahead that will not be attempted now (a stop): gives back what a 'go' counted. */
  const discard = (w: Webhook): void => {
    const p = early.get(w);
    if (!p) return;
    early.delete(w);
    p.then(
      ({ a, release }) => {
        release();
        if (a.kind === 'go')
          record({ id: w.id, endpointHash: w.endpoint_hash, host: originOf(w).host, now: d.clock.now(), outcome: 'neutral', probe: a.probe, counted: a.counted });
      },
      () => {},
    );
  };

  /** An attempt that ended without recording its completion (a fault): its leases end now instead of being renewed. */
  const abandon = (w: Webhook, a: Admission | { kind: 'held' }): void => {
    if (a.kind === 'go' && keeper?.has(w.id))
      record({ id: w.id, endpointHash: w.endpoint_hash, host: originOf(w).host, now: d.clock.now(), outcome: 'neutral', probe: a.probe, counted: a.counted });
  };

  const rate = { rate: config.rate_limit.rate, burst: config.rate_limit.burst };
  const degraded = { local, outage, slots, clock: d.clock, recheckMs: dg.recheck_interval, rate, rates, isStopping: d.isStopping, nap: napUntilCompletion };

  const admit = async (w: Webhook, lane: Lane): Promise<Admitted> => {
    if (!ask1 || !guards) {
      const release = await slots.acquire(originOf(w).origin);
      return { a: GO, release };
    }
    let asked = early.get(w);
    early.delete(w);
    let waited = false;
    // Scopes whose drain released this webhook: their (draining) pause lets it through.
    const passPause: PauseScope['kind'][] = [];
    for (;;) {
      let got: { a: Admission; release: () => void };
      try {
        const decided = !asked && dg.enabled ? await admitLocally(degraded, w, originOf(w), passPause, d.endpointPolicy?.(w)?.maxConcurrency ?? undefined) : 'ask';
        if (decided !== 'ask' && decided.a.kind === 'go') admittedLocally.add(w.id);
        got = decided !== 'ask' ? decided : await (asked ?? ask(w, lane, waited, passPause));
        asked = undefined;
      } catch (e) {
        asked = undefined;
        // Degraded: the next turn decides locally (docs/RELIABILITY.md, "Redis unreachable").
        if (dg.enabled) {
          if (d.isStopping?.()) throw e;
          outage.failed(e);
          continue;
        }
        if (!config.circuit_breaker.enabled) {
          d.log.warn('guards unavailable; delivering without limits (fail open)', { error: errorMessage(e) });
          return { a: GO, release: await slots.acquire(originOf(w).origin) };
        }
        // Circuit fails closed: without Redis nothing is sent; the webhook waits here, in
        // its batch (uncommitted), until the circuit can be read again.
        if (d.isStopping?.()) throw e;
        d.log.warn('circuit unavailable; delivery waits (fail closed)', { error: errorMessage(e) });
        await sleep(500);
        continue;
      }
      const { a } = got;
      if (a.kind === 'wait') {
        waited = true;
        if (d.isStopping?.()) throw new Error('worker stopping: a delivery waiting for its turn gives up');
        await napUntilCompletion(w.endpoint_hash, WAIT_MS);
        continue;
      }
      if (a.kind === 'paused') {
        const scope = { kind: a.scope, id: a.scope === 'endpoint' ? w.endpoint_hash : w.config_id };
        // Kafka first, then Redis: a FLUSHALL must never take a held webhook whose snapshot
        // howk.state has not got yet (test/unit/reconcile-flush-race.test.ts).
        await d.beforeHold?.(w);
        const held = await guards.holdPaused(scope, encodeWebhook(w), w.released_by);
        if (held === 'held') return { a: { kind: 'held' }, release: NOOP };
        if (held === 'released') passPause.push(a.scope);
        continue; // resumed and drained meanwhile, or released by the drain: ask again
      }
      return got;
    }
  };

  return {
    admit,
    askAhead,
    discard,
    abandon,
    record,
    outage,
    rates,
    settle: (): Promise<unknown> => complete?.idle() ?? Promise.resolve(),
    hostOf: (w: Webhook) => originOf(w).host,
  };
};

export type AdmissionControl = ReturnType<typeof createAdmission>;
