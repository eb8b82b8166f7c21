import { admitCircuit, closedCircuit, recordCircuit, type Circuit } from '../policy/circuit';
import { takeToken, type Bucket } from '../policy/token-bucket';
import type { Admission, AdmitRequest, Completion, EndpointView, GuardParams, Guards, HoldResult, PauseScope, ResumeResult, TakeHeldResult } from '../ports/guards';

// howk-dev's guards: the same decisions as the Redis scripts, on maps.

type Counter = { n: number; expiresAt: number };
/** `drain`/`until`: the drain that owns the scope and its lease (as in the Redis pause value). */
type Pause = { state: 'paused' | 'draining'; held: string[]; drain?: string; until?: number };

const scopeKey = (s: PauseScope) => `${s.kind}:${s.id}`;

export class MemoryGuards implements Guards {
  private circuits = new Map<string, Circuit>();
  private endpointCount = new Map<string, Counter>();
  private domainCount = new Map<string, Counter>();
  private buckets = new Map<string, Bucket>();
  private pauses = new Map<string, Pause>();
  private errors = new Map<string, { at: string; error: string }[]>();

  private count(m: Map<string, Counter>, k: string, now: number): number {
    const c = m.get(k);
    if (!c || c.expiresAt <= now) return 0;
    return c.n;
  }

  private add(m: Map<string, Counter>, k: string, d: number, now: number, ttl: number): number {
    const n = Math.max(0, this.count(m, k, now) + d);
    m.set(k, { n, expiresAt: now + ttl });
    return n;
  }

  private circuit(hash: string): Circuit {
    let c = this.circuits.get(hash);
    if (!c) this.circuits.set(hash, (c = closedCircuit()));
    return c;
  }

  async admit(reqs: AdmitRequest[], p: GuardParams): Promise<Admission[]> {
    return reqs.map((r) => {
      const pass = r.passPause ?? [];
      const paused =
        !pass.includes('endpoint') && this.pauses.has(scopeKey({ kind: 'endpoint', id: r.endpointHash })) ? 'endpoint'
        : !pass.includes('config') && this.pauses.has(scopeKey({ kind: 'config', id: r.configId })) ? 'config'
        : undefined;
      if (paused) return { kind: 'paused', scope: paused };
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
      const domainMax = p.maxInflightPerDomain(r.host);
      if (domainMax > 0 && this.count(this.domainCount, r.host, r.now) >= domainMax) {
        return r.lane === 'fast' ? { kind: 'divert', reason: 'domain_inflight' } : { kind: 'wait' };
      }
      const endpointMax = p.maxInflightPerEndpoint;
      if (endpointMax > 0) {
        const n = this.count(this.endpointCount, r.endpointHash, r.now);
        if (r.lane === 'fast' && n >= endpointMax) return { kind: 'divert', reason: 'endpoint_inflight' };
        // Back to the fast lane only once the endpoint is idle; with any in flight the slow lane
        // keeps it (returning at "some room" makes traffic ping-pong between the lanes).
        if (r.lane === 'slow' && n === 0) return { kind: 'recovered' };
      }
      if (domainMax > 0) this.add(this.domainCount, r.host, 1, r.now, p.inflightTtlMs);
      if (endpointMax > 0) this.add(this.endpointCount, r.endpointHash, 1, r.now, p.inflightTtlMs);
      return { kind: 'go', probe, counted: { endpoint: endpointMax > 0, domain: domainMax > 0 } };
    });
  }

  async complete(done: Completion[], p: GuardParams): Promise<void> {
    for (const d of done) {
      if (d.counted.endpoint) this.add(this.endpointCount, d.endpointHash, -1, d.now, p.inflightTtlMs);
      if (d.counted.domain) this.add(this.domainCount, d.host, -1, d.now, p.inflightTtlMs);
      if (p.circuit.enabled) recordCircuit(this.circuit(d.endpointHash), d.now, d.outcome, d.probe, p.circuit);
      if (d.error) {
        const list = this.errors.get(d.endpointHash) ?? [];
        list.unshift({ at: new Date(d.now).toISOString(), error: d.error.slice(0, 200) });
        this.errors.set(d.endpointHash, list.slice(0, 10));
      }
    }
  }

  async endpoint(hash: string, now: number): Promise<EndpointView> {
    const c = this.circuits.get(hash) ?? closedCircuit();
    const pause = this.pauses.get(scopeKey({ kind: 'endpoint', id: hash }));
    return {
      endpoint_hash: hash,
      // An OPEN circuit past its recovery time lets the next admission probe: HALF_OPEN (as on Redis).
      circuit: { state: c.state === 'OPEN' && now >= c.open_until ? 'HALF_OPEN' : c.state, failures: c.failures, open_until: c.state === 'CLOSED' ? null : c.open_until, successes: c.successes, opened_count: c.opened_count },
      inflight: this.count(this.endpointCount, hash, now),
      paused: pause?.state === 'paused',
      draining: pause?.state === 'draining',
      parked_while_paused: pause?.held.length ?? 0,
      last_errors: this.errors.get(hash) ?? [],
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
