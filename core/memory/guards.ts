import {
  allowed,
  freshLimit,
  LATENCY_SAMPLES,
  laneDecision,
  QUEUED_WINDOW_MS,
  recordSample,
  slowness,
  type LimitParams,
  type LimitSample,
  type LimitState,
} from '../policy/adaptive-limit';
import { admitCircuit, closedCircuit, recordCircuit, type Circuit } from '../policy/circuit';
import { concurrencyView } from '../policy/concurrency-view';
import { takeToken, type Bucket } from '../policy/token-bucket';
import { atLimit, count, endLease, heldUntil, lease, renewLease, type Leases } from './leases';
import type {
  Admission,
  AdmitRequest,
  CircuitRestore,
  CircuitTransition,
  Completion,
  EndpointView,
  GuardGauges,
  GuardParams,
  Guards,
  HeldRestore,
  HoldResult,
  InflightLease,
  PauseScope,
  ResumeResult,
  TakeHeldResult,
} from '../ports/guards';

// howk-dev's guards: the same decisions as the Redis scripts, on maps.

/** `drain`/`until`: the drain that owns the scope and its lease (as in the Redis pause value). */
type Pause = { state: 'paused' | 'draining'; held: string[]; drain?: string; until?: number };

const scopeKey = (s: PauseScope) => `${s.kind}:${s.id}`;
const queuedSince = (q: Map<string, number> | undefined, since: number): number => [...(q?.values() ?? [])].filter((at) => at >= since).length;

export class MemoryGuards implements Guards {
  private circuits = new Map<string, Circuit>();
  private endpointLeases = new Map<string, Leases>();
  private domainLeases = new Map<string, Leases>();
  private buckets = new Map<string, Bucket>();
  private throttles = new Map<string, Bucket>();
  private pauses = new Map<string, Pause>();
  private errors = new Map<string, { at: string; error: string }[]>();
  private limits = new Map<string, LimitState>();
  private domainLimits = new Map<string, LimitState>();
  private latencies = new Map<string, { at: number; ms: number }[]>();
  private queued = new Map<string, Map<string, number>>();

  async takeToken(hash: string, owner: string, rate: number, burst: number, now: number): Promise<number> {
    const key = `${hash}:${owner}`;
    const b = this.throttles.get(key) ?? { tokens: burst, at: now };
    this.throttles.set(key, b);
    const t = takeToken(b, now, rate, burst);
    return t.ok ? 0 : t.waitMs;
  }

  private learn(m: Map<string, LimitState>, k: string, x: LimitSample, inflight: number, now: number, p: LimitParams): void {
    m.set(k, recordSample(m.get(k) ?? freshLimit(p), x, inflight, now, p));
  }

  private queue(hash: string, id: string, at: number | undefined): void {
    const q = this.queued.get(hash) ?? new Map<string, number>();
    this.queued.set(hash, q);
    if (at === undefined) q.delete(id);
    else q.set(id, at);
  }

  private circuit(hash: string): Circuit {
    let c = this.circuits.get(hash);
    if (!c) this.circuits.set(hash, (c = closedCircuit()));
    return c;
  }

  async gauges(now: number): Promise<GuardGauges> {
    let openCircuits = 0;
    for (const c of this.circuits.values()) if (c.state !== 'CLOSED') openCircuits++;
    let inflight = 0;
    for (const hash of this.endpointLeases.keys()) inflight += count(this.endpointLeases, hash, now);
    return { openCircuits, inflight };
  }

  async admit(reqs: AdmitRequest[], p: GuardParams): Promise<Admission[]> {
    return reqs.map((r) => {
      const a = this.admitOne(r, p);
      if (a.kind === 'wait' && r.lane === 'fast') this.queue(r.endpointHash, r.id, r.now);
      else if (r.waited) this.queue(r.endpointHash, r.id, undefined);
      return a;
    });
  }

  private admitOne(r: AdmitRequest, p: GuardParams): Admission {
    const pass = r.passPause ?? [];
    const paused =
      !pass.includes('endpoint') && this.pauses.has(scopeKey({ kind: 'endpoint', id: r.endpointHash }))
        ? 'endpoint'
        : !pass.includes('config') && this.pauses.has(scopeKey({ kind: 'config', id: r.configId }))
          ? 'config'
          : undefined;
    if (paused) return { kind: 'paused', scope: paused };
    const held = r.copy ? (heldUntil(this.endpointLeases, r.endpointHash, r.id, r.now) ?? heldUntil(this.domainLeases, r.host, r.id, r.now)) : undefined;
    if (held !== undefined) return { kind: 'elsewhere', until: held };
    let probe = false;
    if (p.circuit.enabled) {
      const a = admitCircuit(this.circuit(r.endpointHash), r.now, p.circuit);
      if (!a.allowed) return { kind: 'park', reason: 'circuit_open', until: a.until };
      probe = a.probe;
    }
    if (p.rate > 0) {
      const b = this.buckets.get(r.endpointHash) ?? { tokens: p.burst, at: r.now };
      this.buckets.set(r.endpointHash, b);
      const t = takeToken(b, r.now, p.rate, p.burst);
      if (!t.ok) return { kind: 'park', reason: 'rate_limited', until: r.now + t.waitMs };
    }
    // Without an endpoint limit nothing is measured: the endpoint never counts as slow.
    const endpointMax = p.maxInflightPerEndpoint;
    const ep = endpointMax > 0 ? (this.limits.get(r.endpointHash) ?? freshLimit(p.limits)) : undefined;
    const slow = ep ? slowness(ep, r.now, p.limits).slow : false;
    const domainMax = p.maxInflightPerDomain(r.host);
    if (domainMax > 0) {
      const lim = Math.min(allowed(this.domainLimits.get(r.host) ?? freshLimit({ ...p.limits, ceiling: domainMax })), domainMax);
      if (atLimit(this.domainLeases, r.host, r.now, lim, r.id)) return r.lane === 'fast' && slow ? { kind: 'divert', reason: 'domain_inflight' } : { kind: 'wait' };
    }
    let fastLimit = 0;
    const cap = r.ceiling || Infinity; // the slow lane goes past the fast-lane share (uncounted), never past the endpoint's own ceiling
    if (ep) {
      fastLimit = Math.min(allowed(ep), endpointMax, cap);
      const full = (r.lane === 'fast' || cap < Infinity) && atLimit(this.endpointLeases, r.endpointHash, r.now, r.lane === 'fast' ? fastLimit : cap, r.id);
      const d = r.lane === 'slow' && slow && full ? 'wait' : laneDecision(r.lane, full, slow);
      if (d === 'recovered') return { kind: 'recovered' };
      if (d === 'divert') return { kind: 'divert', reason: 'endpoint_inflight' };
      if (d === 'wait') return { kind: 'wait' };
    }
    if (domainMax > 0) lease(this.domainLeases, r.host, r.id, r.now, p.inflightLeaseMs);
    if (ep) lease(this.endpointLeases, r.endpointHash, r.id, r.now, p.inflightLeaseMs);
    const counted = { endpoint: ep !== undefined, domain: domainMax > 0 };
    return ep ? { kind: 'go', probe, counted, seen: { fastLimit, limit: Math.min(ep.limit, cap), latencyMs: ep.latMs } } : { kind: 'go', probe, counted };
  }

  async complete(done: Completion[], p: GuardParams): Promise<CircuitTransition[]> {
    const moved: CircuitTransition[] = [];
    for (const d of done) {
      const x = d.sample;
      if (x && d.counted.endpoint) {
        this.learn(this.limits, d.endpointHash, x, count(this.endpointLeases, d.endpointHash, d.now), d.now, p.limits);
        if (!x.drop || x.timeout) this.latencies.set(d.endpointHash, [{ at: d.now, ms: x.ms }, ...(this.latencies.get(d.endpointHash) ?? [])].slice(0, LATENCY_SAMPLES));
      }
      if (x && d.counted.domain) this.learn(this.domainLimits, d.host, x, count(this.domainLeases, d.host, d.now), d.now, { ...p.limits, ceiling: p.maxInflightPerDomain(d.host) });
      if (d.counted.endpoint) endLease(this.endpointLeases, d.endpointHash, d.id);
      if (d.counted.domain) endLease(this.domainLeases, d.host, d.id);
      if (p.circuit.enabled) {
        const c = this.circuit(d.endpointHash);
        const before = c.state;
        recordCircuit(c, d.now, d.outcome, d.probe, p.circuit);
        // Opened (failures, a failed probe) or closed (the probes): what completeDelivery.lua reports.
        if (c.state !== before && c.state !== 'HALF_OPEN')
          moved.push({ endpointHash: d.endpointHash, state: c.state, at: d.now, openUntil: c.state === 'OPEN' ? c.open_until : 0, openedCount: c.opened_count });
      }
      if (d.error) {
        const list = this.errors.get(d.endpointHash) ?? [];
        list.unshift({ at: new Date(d.now).toISOString(), error: d.error.slice(0, 200) });
        this.errors.set(d.endpointHash, list.slice(0, 10));
      }
    }
    return moved;
  }

  async renew(leases: InflightLease[], now: number, p: GuardParams): Promise<void> {
    for (const l of leases) {
      if (l.counted.endpoint) renewLease(this.endpointLeases, l.endpointHash, l.id, now, p.inflightLeaseMs);
      if (l.counted.domain) renewLease(this.domainLeases, l.host, l.id, now, p.inflightLeaseMs);
    }
  }

  async endpoint(hash: string, now: number, p: GuardParams): Promise<EndpointView> {
    const c = this.circuits.get(hash) ?? closedCircuit();
    const pause = this.pauses.get(scopeKey({ kind: 'endpoint', id: hash }));
    return {
      endpoint_hash: hash,
      // An OPEN circuit past its recovery time lets the next admission probe: HALF_OPEN (as on Redis).
      circuit: {
        state: c.state === 'OPEN' && now >= c.open_until ? 'HALF_OPEN' : c.state,
        failures: c.failures,
        open_until: c.state === 'CLOSED' ? null : c.open_until,
        successes: c.successes,
        opened_count: c.opened_count,
      },
      inflight: count(this.endpointLeases, hash, now),
      paused: pause?.state === 'paused',
      draining: pause?.state === 'draining',
      parked_while_paused: pause?.held.length ?? 0,
      last_errors: this.errors.get(hash) ?? [],
      concurrency: concurrencyView(
        this.limits.get(hash) ?? freshLimit(p.limits),
        this.latencies.get(hash) ?? [],
        count(this.endpointLeases, hash, now),
        queuedSince(this.queued.get(hash), now - QUEUED_WINDOW_MS),
        now,
        p,
      ),
    };
  }

  async resetCircuit(hash: string): Promise<void> {
    this.circuits.delete(hash);
  }

  async pause(s: PauseScope): Promise<void> {
    const cur = this.pauses.get(scopeKey(s));
    if (cur) cur.state = 'paused';
    else this.pauses.set(scopeKey(s), { state: 'paused', held: [] });
  }

  async restorePauses(scopes: PauseScope[]): Promise<number> {
    const before = this.pauses.size; // grows only by the scopes not paused yet
    for (const s of scopes) if (!this.pauses.has(scopeKey(s))) this.pauses.set(scopeKey(s), { state: 'paused', held: [] });
    return this.pauses.size - before;
  }

  /** Memory circuits have no TTL (`ttlMs` is not used). */
  async restoreCircuits(items: CircuitRestore[]): Promise<number> {
    let n = 0;
    for (const r of items) {
      // A live open or half-open circuit is newer: it wins. A closed one only counts what
      // happened since the loss (restoreCircuit-1.lua).
      if ((this.circuits.get(r.endpointHash)?.state ?? 'CLOSED') !== 'CLOSED') continue;
      this.circuits.set(r.endpointHash, { ...closedCircuit(), state: 'OPEN', open_until: r.openUntil, opened_count: r.openedCount });
      n++;
    }
    return n;
  }

  async restoreHeld(s: PauseScope, items: HeldRestore[]): Promise<number | null> {
    const cur = this.pauses.get(scopeKey(s));
    if (!cur) return items.length ? null : 0;
    const have = new Set(cur.held);
    let n = 0;
    for (const { data } of items) {
      if (have.has(data)) continue;
      cur.held.push(data);
      have.add(data);
      n++;
    }
    return n;
  }

  async holdPaused(s: PauseScope, data: string, releasedBy: readonly string[] = []): Promise<HoldResult> {
    const cur = this.pauses.get(scopeKey(s));
    if (!cur) return 'gone';
    if (cur.state === 'draining' && cur.drain !== undefined && releasedBy.includes(cur.drain)) return 'released';
    cur.held.push(data);
    return 'held';
  }

  async resume(s: PauseScope, drain: string, now: number, leaseMs: number): Promise<ResumeResult> {
    const cur = this.pauses.get(scopeKey(s));
    if (!cur) return 'none';
    cur.state = 'draining';
    if (cur.drain !== undefined && (cur.until ?? 0) > now) return 'running';
    cur.drain = drain;
    cur.until = now + leaseMs;
    return 'drain';
  }

  async peekHeld(s: PauseScope, limit: number): Promise<string[]> {
    return (this.pauses.get(scopeKey(s))?.held ?? []).slice(0, Math.max(0, limit));
  }

  async takeHeld(s: PauseScope, drain: string, limit: number, now: number, leaseMs: number): Promise<TakeHeldResult> {
    const cur = this.pauses.get(scopeKey(s));
    if (!cur || cur.drain !== drain) return { kind: 'lost' };
    if (cur.state === 'paused') {
      cur.drain = cur.until = undefined;
      return { kind: 'paused' };
    }
    cur.until = now + leaseMs;
    if (!cur.held.length) {
      this.pauses.delete(scopeKey(s));
      return { kind: 'done' };
    }
    return { kind: 'batch', items: cur.held.slice(0, Math.max(1, limit)) };
  }

  async dropHeld(s: PauseScope, drain: string, n: number): Promise<number> {
    const cur = this.pauses.get(scopeKey(s));
    if (!cur || cur.drain !== drain) return -1;
    cur.held.splice(0, n);
    if (cur.held.length === 0 && cur.state === 'draining') this.pauses.delete(scopeKey(s));
    return cur.held.length;
  }
}
