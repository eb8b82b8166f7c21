import { afterEach, beforeEach, describe, expect } from 'vitest';
import type { Webhook } from '../../core/domain/webhook';
import type { CircuitOutcome } from '../../core/policy/circuit';
import type { Admission, AdmitRequest, Completion, GuardParams, Guards } from '../../core/ports/guards';

// Shared pieces of the Guards contract suites: the harness each adapter provides, the
// builders, and a suite's per-test harness with the helpers its cases drive it through.

export type GuardsHarness = {
  guards: Guards;
  /** A second client on the same store (its own connection for Redis), for races. */
  peer: Guards;
  cleanup(): Promise<void>;
};

export type MakeGuards = () => Promise<GuardsHarness>;

/** What an adapter keeps: `hostLimits: false` on a Redis Cluster, whose host limit is fixed and kept in two steps (docs/ARCHITECTURE.md, "The per-host limit on a cluster: host first"). */
export type GuardsCaps = { hostLimits?: boolean };

export const T0 = 1_750_000_000_000;
export const EP = 'ep'.repeat(16);
export const EP2 = 'fe'.repeat(16);
export const HOST = 'hooks.example.com';
export const CFG = 'cfg_guards';

export const CB = { failure_threshold: 3, failure_window: 10_000, recovery_timeout: 30_000, probe_interval: 5_000, success_threshold: 2 };

/** Every guard off except the circuit; in-flight leases and circuit state live far longer than any test. */
export const LIMITS = { initial: 20, floor: 1, ceiling: 1000, tolerance: 2, slowThresholdMs: 1000, windowMs: 30_000 };

export const params = (patch: Partial<GuardParams> = {}): GuardParams => ({
  circuit: { ...CB, enabled: true },
  maxInflightPerEndpoint: 0,
  maxInflightPerDomain: () => 0,
  inflightLeaseMs: 3_600_000,
  rate: 0,
  burst: 0,
  circuitTtlMs: 86_400_000,
  limits: LIMITS,
  ...patch,
});

let seq = 0;
/** An admission request of a webhook of its own (a fresh id) unless `patch` names one. */
export const req = (patch: Partial<AdmitRequest> = {}): AdmitRequest => ({ endpointHash: EP, host: HOST, configId: CFG, lane: 'fast', now: T0, id: `wh_r${++seq}`, ...patch });

export type Go = Extract<Admission, { kind: 'go' }>;

export const NOT_COUNTED = { endpoint: false, domain: false };

export const completion = (patch: Partial<Completion> & { outcome: CircuitOutcome }): Completion => ({
  id: 'wh_never_admitted',
  endpointHash: EP,
  host: HOST,
  now: T0,
  probe: false,
  counted: NOT_COUNTED,
  ...patch,
});

export const webhook = (i: number, configId = CFG): Webhook => ({
  id: `wh_${String(i).padStart(4, '0')}`,
  config_id: configId,
  endpoint: 'https://hooks.example.com/in',
  endpoint_hash: EP,
  payload: `{"n":${i}}`,
  headers: {},
  attempt: 0,
  max_attempts: 5,
  deferrals: 0,
  created_at: '2025-06-15T14:13:20.000Z',
  scheduled_at: '2025-06-15T14:13:20.000Z',
});

/**
 * What a suite's cases see: the harness of the running test (`guards`, `peer`) and helpers
 * that drive it. The helpers remember the deliveries they admitted with a lease, so that a
 * completion without an id ends the oldest one, as its worker would.
 */
export type GuardsContext = {
  readonly guards: Guards;
  readonly peer: Guards;
  admit1(patch?: Partial<AdmitRequest>, p?: GuardParams, g?: Guards): Promise<Admission>;
  /** admit1 that must answer go. */
  go(patch?: Partial<AdmitRequest>, p?: GuardParams): Promise<Go>;
  /**
   * Completes a delivery: without an id, the oldest admitted one of the endpoint and host
   * (as its worker would), or, when there is none, one that was never admitted.
   */
  complete(patch: Partial<Completion> & { outcome: CircuitOutcome }, p?: GuardParams): ReturnType<Guards['complete']>;
  /** Non-probe failures at the given times (CLOSED failure counting). */
  failAt(...times: number[]): Promise<void>;
  /** Opens the circuit of EP with failures at `at`; returns open_until. */
  openAt(at?: number): Promise<number>;
  /** The circuit view of an endpoint at `now`. */
  state(now: number, hash?: string): Promise<Awaited<ReturnType<Guards['endpoint']>>['circuit']>;
  /** Forgets the admitted deliveries (their completions never come: a crashed worker). */
  forgetAdmitted(): void;
};

/** One suite: a harness of its own for each test, cleaned up after it. */
export const guardsSuite = (title: string, make: MakeGuards, body: (h: GuardsContext) => void): void => {
  describe(title, () => {
    let harness: GuardsHarness;
    /** Deliveries admitted with a lease and not completed yet, oldest first. */
    let admitted: { id: string; endpointHash: string; host: string }[];
    beforeEach(async () => {
      harness = await make();
      admitted = [];
    });
    afterEach(async () => {
      await harness.cleanup();
    });

    const admit1: GuardsContext['admit1'] = async (patch = {}, p = params(), g = harness.guards) => {
      const r = req(patch);
      const [a] = await g.admit([r], p);
      if (!a) throw new Error('admit returned no admission');
      if (a.kind === 'go' && (a.counted.endpoint || a.counted.domain)) admitted.push({ id: r.id, endpointHash: r.endpointHash, host: r.host });
      return a;
    };
    const go: GuardsContext['go'] = async (patch = {}, p = params()) => {
      const a = await admit1(patch, p);
      if (a.kind !== 'go') throw new Error(`expected go, got ${JSON.stringify(a)}`);
      return a;
    };
    const complete: GuardsContext['complete'] = (patch, p = params()) => {
      const c = completion(patch);
      if (patch.id === undefined) {
        const i = admitted.findIndex((x) => x.endpointHash === c.endpointHash && x.host === c.host);
        if (i >= 0) c.id = admitted.splice(i, 1)[0]!.id;
      } else admitted = admitted.filter((x) => x.id !== patch.id);
      return harness.guards.complete([c], p);
    };
    const failAt: GuardsContext['failAt'] = async (...times) => {
      for (const now of times) await complete({ outcome: 'failure', now });
    };
    const openAt: GuardsContext['openAt'] = async (at = T0) => {
      await failAt(...Array.from({ length: CB.failure_threshold }, () => at));
      const v = await harness.guards.endpoint(EP, at, params());
      expect(v.circuit.state).toBe('OPEN');
      return at + CB.recovery_timeout;
    };
    const state: GuardsContext['state'] = async (now, hash = EP) => (await harness.guards.endpoint(hash, now, params())).circuit;

    body({
      get guards() {
        return harness.guards;
      },
      get peer() {
        return harness.peer;
      },
      admit1,
      go,
      complete,
      failAt,
      openAt,
      state,
      forgetAdmitted: () => {
        admitted = [];
      },
    });
  });
};
