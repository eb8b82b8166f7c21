import { describe, expect, it } from 'vitest';
import { createLab, LAB_CONFIG, type LabAttempt, type LabSnapshot, type ScenarioId } from '../../core/lab';

// The five guided scenarios of the Lab (core/lab), each run on the simulated clock and
// checked against counters derived by hand from LAB_CONFIG: 4 workers, 300 ms answers,
// 2 s timeout, 5 attempts, backoff 2 s × 2^attempt ± 20 %, 6 deferrals, circuit opening at
// 3 failures for 10 s then one probe per 5 s (1 good probe closes it), buckets of 3 tokens
// refilling 1 per second. Every expectation holds for any seed (the jitter only moves retries
// inside windows the derivations allow for): each runs with three seeds.

const SEEDS = [1, 2, 3];
const run = (scenario: ScenarioId, ms: number, seed: number): LabSnapshot => {
  const lab = createLab({ scenario, seed });
  lab.step(ms);
  return lab.snapshot();
};
const sub = (s: LabSnapshot, id: string) => s.subscribers.find((x) => x.id === id)!;
/** Every attempt made to a subscriber, in start order. */
const attemptsTo = (s: LabSnapshot, id: string): LabAttempt[] =>
  s.deliveries
    .filter((d) => d.subscriberId === id)
    .flatMap((d) => d.history)
    .sort((a, b) => a.startedAt - b.startedAt);

describe('Lab scenarios', () => {
  it('uses the parameters the derivations below assume', () => {
    expect(LAB_CONFIG).toMatchObject({ workers: 4, latencyMs: 300, timeoutMs: 2000, maxAttempts: 5, rateLimit: { rate: 1, burst: 3 } });
    expect(LAB_CONFIG.retry).toMatchObject({ base_delay: 2000, jitter: 0.2, max_deferrals: 6 });
    expect(LAB_CONFIG.circuit).toMatchObject({ failure_threshold: 3, recovery_timeout: 10_000, probe_interval: 5000, success_threshold: 1 });
  });

  it.each(SEEDS)('Healthy (seed %i): every event delivered once to each subscriber, paced by the token bucket', (seed) => {
    // One event at 0 s and a burst of 6 at 2 s: 7 events × 3 subscribers = 21 deliveries,
    // each answered 200 at its first attempt, so 21 requests and 21 effects.
    const s = run('healthy', 15_000, seed);
    expect(s.counters).toMatchObject({
      events: 7,
      deliveries: 21,
      delivered: 21,
      requests: 21,
      failed: 0,
      deferred: 0,
      deadLetters: 0,
      effects: 21,
      duplicates: 0,
      inFlight: 0,
      waiting: 0,
      queued: 0,
      circuitOpens: 0,
    });
    for (const x of s.subscribers) {
      expect(x).toMatchObject({ delivered: 7, effects: 7, failed: 0, deadLettered: 0 });
      // By 2 s the bucket has refilled to 3: three burst deliveries go at once, the other
      // three wait for a token (parked, no attempt spent) and start one second apart.
      expect(x.parked).toBeGreaterThan(0);
      const starts = s.deliveries
        .filter((d) => d.subscriberId === x.id && d.createdAt === 2000)
        .map((d) => d.history[0]!.startedAt)
        .sort((a, b) => a - b);
      expect(starts).toHaveLength(6);
      starts.forEach((t, i) => expect(t).toBeGreaterThanOrEqual(2000 + Math.max(0, i + 1 - 3) * 1000));
      expect(s.deliveries.filter((d) => d.subscriberId === x.id).every((d) => d.history.length === 1 && d.state === 'delivered')).toBe(true);
    }
  });

  it.each(SEEDS)('Failure (seed %i): the circuit opens at the 3rd failure and Billing is then only probed', (seed) => {
    // Burst of 3 at 0 s. Four workers: Billing's wh-0001 and wh-0004 start at 0 s, wh-0007
    // at 0.3 s; their 503s at 0.3, 0.3 and 0.6 s are 3 failures: OPEN until 10.6 s.
    // The retries (due at about 2.4 s) are parked, not attempted. Probe 1 at 10.6 s fails at
    // 10.9 s → OPEN until 15.9 s; then probes at 15.9, 21.2, 26.5 s (each 5 s after the
    // previous probe's answer). A Billing delivery is due by each of those moments, so in
    // 30 s Billing gets 3 + 4 = 7 requests, all failed, none dead yet.
    const s = run('failure', 30_000, seed);
    const billing = sub(s, 'billing');
    expect(billing).toMatchObject({ requests: 7, failed: 7, delivered: 0, deadLettered: 0, effects: 0 });
    expect(billing.circuit).toMatchObject({ state: 'OPEN', opened: 1 });
    expect(billing.parked).toBeGreaterThan(0);
    // The healthy subscribers share the workers and are not held back.
    for (const id of ['shipping', 'crm']) expect(sub(s, id)).toMatchObject({ delivered: 3, failed: 0, effects: 3, requests: 3 });
    expect(s.counters).toMatchObject({ events: 3, deliveries: 9, delivered: 6, deadLetters: 0, circuitOpens: 1, waiting: 3 });

    const starts = attemptsTo(s, 'billing');
    expect(starts.map((a) => a.startedAt)).toEqual([0, 0, 300, 10_600, 15_900, 21_200, 26_500]);
    // While open nothing is attempted; after it every attempt is a probe, ≥ probe_interval apart.
    expect(starts.slice(0, 3).every((a) => !a.probe)).toBe(true);
    expect(starts.slice(3).every((a) => a.probe)).toBe(true);
  });

  it.each(SEEDS)('Failure (seed %i): each Billing delivery is dead-lettered after exactly 5 attempts', (seed) => {
    // 3 deliveries × max_attempts 5 = 15 requests, then nothing more is sent. Bound on when:
    // after the opening each probe spends one attempt, and the next one goes at most
    // max(probe_interval, largest backoff 16 s + 20 %) + 0.3 s later, so the 12 remaining
    // attempts are spent by 10.6 + 12 × 19.5 = 244.6 s.
    const s = run('failure', 250_000, seed);
    const billing = sub(s, 'billing');
    expect(billing).toMatchObject({ requests: 15, failed: 15, deadLettered: 3, delivered: 0 });
    expect(s.counters).toMatchObject({ deadLetters: 3, delivered: 6, effects: 6, waiting: 0, inFlight: 0 });
    expect(s.deadLetters.map((d) => [d.subscriberId, d.reasonType, d.attempts])).toEqual([
      ['billing', 'exhausted', 5],
      ['billing', 'exhausted', 5],
      ['billing', 'exhausted', 5],
    ]);
  });

  it.each(SEEDS)('Recovery (seed %i): repair does not close the circuit; the next probe does, then the backlog drains', (seed) => {
    // As Failure, plus 3 events at 5 s (Billing's parked at once) and the repair at 12 s.
    // Probe 1 at 10.6 s fails (Billing still broken); probe 2 at 15.9 s gets 200 and closes
    // the circuit. The five others asked while the probe was out and were parked until the
    // next probe slot, 15.9 + 5 = 20.9 s; then the bucket (3 tokens) lets three go at 20.9 s
    // and one per second after: 21.9 and 22.9 s.
    const s = run('recovery', 30_000, seed);
    const billing = sub(s, 'billing');
    expect(billing.circuit).toMatchObject({ state: 'CLOSED', opened: 1 });
    expect(billing).toMatchObject({ delivered: 6, failed: 4, deadLettered: 0, effects: 6, requests: 10 });
    expect(s.counters).toMatchObject({ events: 6, deliveries: 18, delivered: 18, deadLetters: 0, effects: 18, duplicates: 0, waiting: 0 });
    const after = attemptsTo(s, 'billing').filter((a) => a.startedAt > 12_000);
    expect(after.map((a) => [a.startedAt, a.probe, a.result])).toEqual([
      [15_900, true, 'delivered'],
      [20_900, false, 'delivered'],
      [20_900, false, 'delivered'],
      [20_900, false, 'delivered'],
      [21_900, false, 'delivered'],
      [22_900, false, 'delivered'],
    ]);
    expect(s.log.some((l) => l.at === 16_200 && l.text === 'the probe to Billing succeeded: circuit closed')).toBe(true);
  });

  it.each(SEEDS)('Rate limit (seed %i): 429 deferrals retry exactly at Retry-After and spend no attempt', (seed) => {
    // Billing's three deliveries get 429 + Retry-After: 4 at 0.3, 0.3 and 0.6 s, again at
    // 4.6/4.9 s and 8.9/9.2 s (3 deferrals each); repaired at 10 s, the 4th request of each
    // (12.9/13.2 s) is delivered. 4 requests per delivery, 12 in all; no failure, no backoff.
    const s = run('rate_limit', 20_000, seed);
    const billing = sub(s, 'billing');
    expect(billing).toMatchObject({ delivered: 3, requests: 12, deferred: 9, failed: 0, deadLettered: 0, effects: 3 });
    expect(billing.circuit).toMatchObject({ state: 'CLOSED', opened: 0, failures: 0 });
    expect(s.counters).toMatchObject({ delivered: 9, failed: 0, deferred: 9, deadLetters: 0 });
    for (const d of s.deliveries.filter((x) => x.subscriberId === 'billing')) {
      // Every request carried attempt 1: a deferral does not move the attempt number.
      expect(d).toMatchObject({ state: 'delivered', attempt: 1, failures: 0, deferrals: 3, requests: 4 });
      expect(d.history.every((h) => h.attempt === 1)).toBe(true);
      for (let i = 1; i < d.history.length; i++) expect(d.history[i]!.startedAt - d.history[i - 1]!.endedAt).toBe(4000);
    }
  });

  it('Rate limit: past the deferral budget a 429 spends attempts, and the delivery dead-letters', () => {
    // Billing never stops answering 429: 6 deferrals (the budget), then each 429 is a failed
    // attempt on the backoff schedule: 5 attempts, then the dead letter. 6 + 5 = 11 requests.
    // A 429 says nothing against the endpoint's health: its circuit never opens.
    const lab = createLab({ seed: 7 });
    lab.setBehaviour('billing', { kind: 'rate_limiting', retryAfterS: 4 });
    lab.sendOne();
    lab.step(90_000);
    const s = lab.snapshot();
    expect(sub(s, 'billing')).toMatchObject({ requests: 11, deferred: 6, failed: 5, deadLettered: 1 });
    expect(sub(s, 'billing').circuit.opened).toBe(0);
    expect(s.deadLetters).toHaveLength(1);
    expect(s.deadLetters[0]).toMatchObject({ reasonType: 'exhausted', attempts: 5, deferrals: 6, requests: 11 });
  });

  it.each(SEEDS)('Lost response (seed %i): retried after a lost response, the consumer drops the duplicate', (seed) => {
    // Events at 0 and 1 s. Billing applies both but its answers are lost: timeouts at 2 and
    // 3 s (2 failures, under the threshold of 3). It answers again from 3.5 s; the retries
    // are due at 2 s + 2 s ± 20 % ≥ 3.6 s and 3 s + 2 s ± 20 % ≥ 4.6 s, so each gets 200 from a
    // consumer that already applied that webhook id: 2 duplicates, still 1 effect per event.
    const s = run('lost_response', 15_000, seed);
    const billing = sub(s, 'billing');
    expect(billing).toMatchObject({ delivered: 2, requests: 4, failed: 2, effects: 2, duplicates: 2, deadLettered: 0 });
    expect(billing.effects).toBe(s.counters.events);
    expect(billing.circuit.state).toBe('CLOSED');
    expect(s.counters).toMatchObject({ events: 2, deliveries: 6, delivered: 6, effects: 6, duplicates: 2, deadLetters: 0 });
    expect(s.counters.duplicates).toBeGreaterThan(0);
  });
});
