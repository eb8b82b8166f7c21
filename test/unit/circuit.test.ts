import { beforeEach, describe, expect, it } from 'vitest';
import { admitCircuit, closedCircuit, recordCircuit, type Circuit, type CircuitOutcome, type CircuitParams } from '../../core/policy/circuit';
import { takeToken, type Bucket } from '../../core/policy/token-bucket';

// The pure circuit breaker and token bucket (core/policy), driven by a fake clock. The
// guard adapters (test/contract/guards.contract.ts) are held to the same transitions.

const P: CircuitParams = { failure_threshold: 3, failure_window: 10_000, recovery_timeout: 30_000, probe_interval: 5_000, success_threshold: 2 };
const T0 = 1_750_000_000_000;

const fakeClock = (start = T0) => {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms), set: (at: number) => void (t = at) };
};

describe('circuit breaker (core/policy/circuit.ts)', () => {
  let c: Circuit;
  let clock: ReturnType<typeof fakeClock>;
  const admit = () => admitCircuit(c, clock.now(), P);
  const record = (outcome: CircuitOutcome, probe = false) => recordCircuit(c, clock.now(), outcome, probe, P);
  /** Fails `n` non-probe attempts, `gap` ms apart (the clock ends on the last one). */
  const fail = (n: number, gap = 0) => {
    for (let i = 0; i < n; i++) {
      if (i > 0) clock.advance(gap);
      record('failure');
    }
  };
  /** CLOSED → OPEN at the current time; returns when it opened. */
  const open = () => {
    fail(P.failure_threshold);
    expect(c.state).toBe('OPEN');
    return clock.now();
  };
  /** OPEN → HALF_OPEN: jumps to open_until and takes the probe. */
  const halfOpen = () => {
    clock.set(c.open_until);
    expect(admit()).toEqual({ allowed: true, probe: true });
    expect(c.state).toBe('HALF_OPEN');
  };

  beforeEach(() => {
    c = closedCircuit();
    clock = fakeClock();
  });

  describe('CLOSED', () => {
    it('starts closed with nothing counted and admits without a probe', () => {
      expect(c).toEqual({ state: 'CLOSED', failures: 0, window_start: 0, open_until: 0, successes: 0, probe_at: 0, opened_count: 0 });
      expect(admit()).toEqual({ allowed: true, probe: false });
      expect(c.state).toBe('CLOSED');
    });

    it('opens after failure_threshold failures within failure_window, until now + recovery_timeout', () => {
      fail(2, 8_000);
      expect(c).toMatchObject({ state: 'CLOSED', failures: 2, window_start: T0 });
      clock.advance(1_999); // third failure 9_999 ms after the first
      record('failure');
      expect(c).toMatchObject({ state: 'OPEN', failures: 3, open_until: T0 + 9_999 + P.recovery_timeout, opened_count: 1 });
    });

    it('counts a failure exactly failure_window after the first one in the same window', () => {
      fail(3, P.failure_window / 2);
      expect(c.state).toBe('OPEN');
    });

    it('does not open when the failures are spread wider than failure_window', () => {
      fail(2, 5_000); // T0, T0+5000
      clock.advance(5_001); // 10_001 ms after the window started: a new window
      record('failure');
      expect(c).toMatchObject({ state: 'CLOSED', failures: 1, window_start: T0 + 10_001 });
      // Ten failures, each 6 s apart: never three in one window.
      c = closedCircuit();
      fail(10, 6_000);
      expect(c.state).toBe('CLOSED');
      expect(c.failures).toBeLessThan(P.failure_threshold);
      expect(admit()).toEqual({ allowed: true, probe: false });
    });

    it('opens within the new window once enough failures gather there', () => {
      record('failure');
      clock.advance(20_000);
      fail(3, 1_000);
      expect(c).toMatchObject({ state: 'OPEN', window_start: T0 + 20_000, open_until: T0 + 22_000 + P.recovery_timeout });
    });

    it('resets the failures on a success', () => {
      fail(2);
      record('success');
      expect(c).toMatchObject({ state: 'CLOSED', failures: 0 });
      fail(2);
      expect(c.state).toBe('CLOSED');
      record('failure');
      expect(c.state).toBe('OPEN');
    });

    it('changes nothing on a neutral outcome (4xx, 429)', () => {
      fail(2);
      const before = { ...c };
      for (let i = 0; i < 10; i++) {
        clock.advance(100);
        record('neutral');
        record('neutral', true);
      }
      expect(c).toEqual(before);
      record('failure');
      expect(c.state).toBe('OPEN');
    });
  });

  describe('OPEN', () => {
    it('parks every admission until recovery_timeout has passed', () => {
      const at = open();
      for (const dt of [0, 1, 15_000, P.recovery_timeout - 1]) {
        clock.set(at + dt);
        expect(admit()).toEqual({ allowed: false, until: at + P.recovery_timeout });
      }
      expect(c.state).toBe('OPEN');
    });

    it('ignores outcomes while open (late answers of attempts sent before it opened)', () => {
      open();
      const before = { ...c };
      clock.advance(1_000);
      record('failure');
      record('success');
      record('failure', true);
      record('success', true);
      expect(c).toEqual(before);
    });

    it('turns HALF_OPEN at open_until with exactly one probe, then parks until the next probe_interval', () => {
      const at = open();
      clock.set(at + P.recovery_timeout);
      expect(admit()).toEqual({ allowed: true, probe: true });
      expect(c).toMatchObject({ state: 'HALF_OPEN', successes: 0, probe_at: at + P.recovery_timeout });
      expect(admit()).toEqual({ allowed: false, until: at + P.recovery_timeout + P.probe_interval });
      clock.advance(P.probe_interval - 1);
      expect(admit()).toEqual({ allowed: false, until: at + P.recovery_timeout + P.probe_interval });
    });

    it('turns HALF_OPEN when first asked after open_until, with probe_at at that time', () => {
      const at = open();
      clock.set(at + P.recovery_timeout + 12_345);
      expect(admit()).toEqual({ allowed: true, probe: true });
      expect(c.probe_at).toBe(at + P.recovery_timeout + 12_345);
    });
  });

  describe('HALF_OPEN', () => {
    it('admits one probe per probe_interval while no probe answers', () => {
      open();
      halfOpen();
      const first = clock.now();
      let probes = 1;
      for (let t = 250; t <= 3 * P.probe_interval; t += 250) {
        clock.set(first + t);
        const a = admit();
        if (a.allowed) {
          expect(a.probe).toBe(true);
          probes++;
        }
      }
      // Probes at first, +5000, +10000, +15000.
      expect(probes).toBe(4);
      expect(c.probe_at).toBe(first + 3 * P.probe_interval);
    });

    it('closes after success_threshold probe successes; the next probe may go at once after a success', () => {
      open();
      halfOpen();
      clock.advance(200);
      record('success', true);
      expect(c).toMatchObject({ state: 'HALF_OPEN', successes: 1, probe_at: 0 });
      expect(admit()).toEqual({ allowed: true, probe: true });
      expect(admit()).toMatchObject({ allowed: false });
      clock.advance(200);
      record('success', true);
      expect(c).toEqual({ ...closedCircuit(), opened_count: 1 });
      expect(admit()).toEqual({ allowed: true, probe: false });
    });

    it('re-opens on a failed probe until now + probe_interval (not recovery_timeout), counting no new opening', () => {
      open();
      halfOpen();
      clock.advance(700);
      const failedAt = clock.now();
      record('failure', true);
      expect(c).toMatchObject({ state: 'OPEN', open_until: failedAt + P.probe_interval, successes: 0, opened_count: 1 });
      clock.advance(P.probe_interval - 1);
      expect(admit()).toEqual({ allowed: false, until: failedAt + P.probe_interval });
      clock.advance(1);
      expect(admit()).toEqual({ allowed: true, probe: true });
      expect(c.state).toBe('HALF_OPEN');
    });

    it('forgets earlier probe successes when a probe fails', () => {
      open();
      halfOpen();
      record('success', true);
      expect(admit()).toEqual({ allowed: true, probe: true });
      record('failure', true);
      expect(c).toMatchObject({ state: 'OPEN', successes: 0 });
      halfOpen();
      record('success', true);
      expect(c).toMatchObject({ state: 'HALF_OPEN', successes: 1 });
    });

    it('ignores late answers of non-probe attempts', () => {
      open();
      halfOpen();
      const before = { ...c };
      record('success');
      record('success');
      record('failure');
      expect(c).toEqual(before);
    });

    it('changes nothing on a neutral probe outcome (the probe slot stays spent)', () => {
      open();
      halfOpen();
      const probeAt = clock.now();
      clock.advance(100);
      record('neutral', true);
      expect(c).toMatchObject({ state: 'HALF_OPEN', successes: 0, probe_at: probeAt });
      expect(admit()).toEqual({ allowed: false, until: probeAt + P.probe_interval });
    });

    it('counts each CLOSED → OPEN in opened_count', () => {
      open();
      halfOpen();
      record('success', true);
      admit();
      record('success', true);
      expect(c.state).toBe('CLOSED');
      clock.advance(60_000);
      open();
      expect(c.opened_count).toBe(2);
    });
  });
});

describe('token bucket (core/policy/token-bucket.ts)', () => {
  // Binary-exact figures (one token per 250 ms), so the float arithmetic is exact too.
  const RATE = 4;
  const BURST = 3;
  let b: Bucket;
  let clock: ReturnType<typeof fakeClock>;
  const take = () => takeToken(b, clock.now(), RATE, BURST);

  beforeEach(() => {
    clock = fakeClock();
    b = { tokens: BURST, at: clock.now() };
  });

  it('lets a full bucket burst, then refuses with the wait until the next token', () => {
    for (let i = 0; i < BURST; i++) expect(take()).toEqual({ ok: true });
    expect(take()).toEqual({ ok: false, waitMs: 250 });
    expect(b).toEqual({ tokens: 0, at: T0 });
  });

  it('refills at `rate` per second; a refusal consumes nothing', () => {
    for (let i = 0; i < BURST; i++) take();
    clock.advance(125);
    expect(take()).toEqual({ ok: false, waitMs: 125 });
    expect(b).toEqual({ tokens: 0.5, at: T0 + 125 });
    clock.advance(62);
    expect(take()).toEqual({ ok: false, waitMs: 63 });
    clock.advance(63); // exactly when the last refusal said
    expect(take()).toEqual({ ok: true });
    expect(b.tokens).toBeCloseTo(0, 9);
    expect(take()).toMatchObject({ ok: false });
  });

  it('never holds more than `burst` tokens after a long idle', () => {
    for (let i = 0; i < BURST; i++) take();
    clock.advance(3_600_000);
    for (let i = 0; i < BURST; i++) expect(take()).toEqual({ ok: true });
    expect(take()).toEqual({ ok: false, waitMs: 250 });
  });

  it('sustains `rate` per second over time', () => {
    let ok = 0;
    for (let ms = 0; ms < 10_000; ms += 10) {
      clock.set(T0 + ms);
      if (take().ok) ok++;
    }
    // The burst plus one token per 250 ms over the 9.99 s after it.
    expect(ok).toBe(BURST + 39);
  });

  it('rounds the wait up to whole milliseconds', () => {
    b = { tokens: 0, at: T0 };
    expect(takeToken(b, T0, 3, 5)).toEqual({ ok: false, waitMs: 334 });
  });

  it('does not drain the bucket when the clock goes backwards', () => {
    b = { tokens: 2, at: T0 };
    expect(takeToken(b, T0 - 5_000, RATE, BURST)).toEqual({ ok: true });
    expect(b.tokens).toBe(1);
  });
});
