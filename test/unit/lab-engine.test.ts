import { describe, expect, it } from 'vitest';
import { createLab, createRandom, LAB_CONFIG, parameterTable, SCENARIO_IDS, summarize, type LabSnapshot } from '../../core/lab';
import { NotFoundError, ValidationError } from '../../core/errors/errors';

// The Lab engine's contract with a UI: determinism, plain-data snapshots, the log ring,
// dead-letter replay, and the controls.

const sub = (s: LabSnapshot, id: string) => s.subscribers.find((x) => x.id === id)!;

describe('Lab engine: determinism', () => {
  it('the seeded generator repeats its sequence for a seed, within [0, 1)', () => {
    const take = (seed: number) => {
      const r = createRandom(seed);
      return Array.from({ length: 1000 }, () => r.next());
    };
    const a = take(9);
    expect(take(9)).toEqual(a);
    expect(take(10)).not.toEqual(a);
    expect(a.every((x) => x >= 0 && x < 1)).toBe(true);
    // Spread enough for a jitter: every tenth of the range is hit.
    expect(new Set(a.map((x) => Math.floor(x * 10))).size).toBe(10);
  });

  it.each(SCENARIO_IDS)('%s: the same seed gives the identical snapshot, however the time is stepped', (scenario) => {
    const a = createLab({ scenario, seed: 42 });
    a.step(60_000);
    // Frame by frame, as a UI at ×4 would drive it (60 fps → 16 ms × 4 per frame), then the rest.
    const b = createLab({ scenario, seed: 42 });
    for (let i = 0; i < 900; i++) b.step(64);
    b.step(60_000 - 900 * 64);
    expect(JSON.stringify(b.snapshot())).toBe(JSON.stringify(a.snapshot()));
  });

  it('a different seed may tell a different story (the backoff jitter is seeded)', () => {
    const at = (seed: number) => {
      const lab = createLab({ scenario: 'failure', seed });
      lab.step(60_000);
      return lab.snapshot();
    };
    const [one, two] = [at(1), at(2)];
    expect(one.seed).toBe(1);
    expect(JSON.stringify(one.deliveries)).not.toBe(JSON.stringify(two.deliveries));
    // …but the counters the scenario teaches do not depend on it (test/unit/lab-scenarios.test.ts).
    expect(one.counters.delivered).toBe(two.counters.delivered);
  });

  it('reset goes back to time 0 and replays the same story', () => {
    const lab = createLab({ scenario: 'recovery', seed: 5 });
    lab.step(30_000);
    const first = lab.snapshot();
    lab.sendOne();
    lab.fail('crm');
    lab.setSpeed(4);
    lab.reset();
    // Time 0 again, with the scenario's commands at 0 s run (Billing failing, a burst of 3);
    // the speed is the UI's choice and stays.
    expect(lab.snapshot()).toEqual({ ...createLab({ scenario: 'recovery', seed: 5 }).snapshot(), speed: 4 });
    expect(lab.snapshot()).toMatchObject({ now: 0, counters: { events: 3, inFlight: 4 } });
    lab.setSpeed(1);
    lab.step(30_000);
    expect(lab.snapshot()).toEqual(first);
  });
});

describe('Lab engine: snapshot and log', () => {
  it('the snapshot is plain JSON data, detached from the engine', () => {
    const lab = createLab({ scenario: 'failure', seed: 1 });
    lab.step(250_000);
    const s = lab.snapshot();
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
    s.deadLetters[0]!.history.length = 0;
    s.subscribers[0]!.delivered = 99;
    s.log.length = 0;
    const again = lab.snapshot();
    expect(again.deadLetters[0]!.history.length).toBe(5);
    expect(again.subscribers[0]!.delivered).toBe(0);
    expect(again.log.length).toBeGreaterThan(0);
  });

  it('the log is a ring of the last 300 lines, oldest first, in plain English', () => {
    const lab = createLab({ seed: 1 });
    // 4 bursts of 25 events: each event logs its acceptance and 3 deliveries (about 400 lines).
    for (let i = 0; i < 4; i++) {
      lab.burst(25);
      lab.step(60_000);
    }
    const { log, counters } = lab.snapshot();
    expect(counters).toMatchObject({ events: 100, delivered: 300 });
    expect(log).toHaveLength(300);
    const last = log[299]!.seq;
    expect(last).toBeGreaterThan(400);
    expect(log.map((l) => l.seq)).toEqual(Array.from({ length: 300 }, (_, i) => last - 299 + i));
    expect(log[299]!.text).toMatch(/^wh-0300 attempt 1 to CRM got 200: delivered$/);
  });

  it('the parameter table is made from the configuration the engine runs on', () => {
    const rows = parameterTable({ ...LAB_CONFIG, workers: 7 });
    expect(rows.find((r) => r.parameter === 'Workers')!.value).toBe('7 concurrent attempts');
    expect(rows.find((r) => r.parameter === 'Backoff')!.value).toBe('2 s × 2^attempt, capped at 60 s, ± 20 %');
    expect(createLab({ config: { workers: 7 } }).snapshot().config.workers).toBe(7);
  });

  it('a failed attempt explains its backoff: attempt, status, wait and formula', () => {
    const lab = createLab({ seed: 3 });
    lab.fail('billing');
    lab.sendOne();
    lab.step(1000);
    const line = lab.snapshot().log.find((l) => l.text.startsWith('wh-0001 attempt 1'))!;
    expect(line.text).toMatch(/^wh-0001 attempt 1 to Billing got 503; next try in \d\.\d s: backoff 2 s × 2⁰ ± 20 %$/);
  });
});

describe('Lab engine: dead-letter replay', () => {
  it('creates a new webhook linked to the dead letter and never alters the original', () => {
    const lab = createLab({ scenario: 'failure', seed: 1 });
    lab.step(250_000);
    const before = lab.snapshot();
    expect(before.deadLetters).toHaveLength(3);
    const original = before.deadLetters[0]!;
    const originalDelivery = lab.delivery(original.id);
    lab.repair('billing');
    const fresh = lab.replay(original.id)!;
    const again = lab.replay(original.id)!;
    lab.step(10_000);
    const after = lab.snapshot();

    expect(fresh).not.toBe(original.id);
    expect(again).not.toBe(fresh);
    for (const id of [fresh, again])
      expect(lab.delivery(id)).toMatchObject({ replayOf: original.id, state: 'delivered', attempt: 1, failures: 0, eventId: original.eventId, subscriberId: 'billing' });
    // The dead letters, the original delivery and its history are exactly as they were.
    expect(after.deadLetters).toEqual(before.deadLetters);
    expect(lab.delivery(original.id)).toEqual(originalDelivery);
    expect(after.counters).toMatchObject({ replays: 2, deadLetters: 3 });
    // Fresh webhook ids: the consumer applies each once.
    expect(sub(after, 'billing')).toMatchObject({ delivered: 2, effects: 2 });
  });

  it('replaying an unknown dead letter is a not_found error, and changes nothing', () => {
    const lab = createLab({ seed: 1 });
    const before = lab.snapshot();
    expect(() => lab.replay('wh-9999')).toThrow(NotFoundError);
    expect(lab.snapshot()).toEqual(before);
  });
});

describe('Lab engine: controls', () => {
  it('pause stops frames, not explicit steps; speed multiplies a frame', () => {
    const lab = createLab({ seed: 1 });
    lab.pause();
    lab.frame(1000);
    expect(lab.snapshot()).toMatchObject({ now: 0, paused: true });
    lab.step(100);
    expect(lab.snapshot().now).toBe(100);
    lab.resume();
    lab.setSpeed(4);
    lab.frame(250);
    expect(lab.snapshot()).toMatchObject({ now: 1100, paused: false, speed: 4 });
    lab.togglePause();
    expect(lab.snapshot().paused).toBe(true);
  });

  it('fractions of a millisecond carry over instead of being lost', () => {
    const lab = createLab({ seed: 1 });
    for (let i = 0; i < 60; i++) lab.step(1000 / 60);
    expect(lab.snapshot().now).toBeGreaterThanOrEqual(999);
    expect(lab.snapshot().now).toBeLessThanOrEqual(1000);
    for (let i = 0; i < 5; i++) lab.step(0.4);
    expect(lab.snapshot().now).toBeGreaterThanOrEqual(1001);
  });

  it('a send is dispatched at once; the counters follow it through in flight to delivered', () => {
    const lab = createLab({ seed: 1, config: { workers: 2 } });
    lab.sendOne();
    expect(lab.snapshot().counters).toMatchObject({ events: 1, deliveries: 3, inFlight: 2, queued: 1, delivered: 0 });
    lab.step(300);
    expect(lab.snapshot().counters).toMatchObject({ inFlight: 1, queued: 0, delivered: 2 });
    lab.step(300);
    expect(lab.snapshot().counters).toMatchObject({ inFlight: 0, delivered: 3, effects: 3 });
  });

  it('a burst is clamped to 25 events; sends past the queue bound are rejected and logged', () => {
    const lab = createLab({ seed: 1 });
    expect(lab.burst(40)).toHaveLength(25);
    lab.burst(25);
    // 50 events = 150 outstanding deliveries; 16 more fit under 200, the rest are rejected.
    const third = lab.burst(25);
    expect(third).toHaveLength(16);
    const s = lab.snapshot();
    expect(s.counters).toMatchObject({ events: 66, deliveries: 198, rejected: 9 });
    expect(s.log.at(-1)!.text).toBe('Send rejected: 200 deliveries are outstanding (the queue bound).');
  });

  it('a 4xx other than 429 dead-letters at the first attempt without opening the circuit', () => {
    const lab = createLab({ seed: 1 });
    lab.fail('billing', 404);
    lab.burst(3);
    lab.step(5000);
    const s = lab.snapshot();
    expect(sub(s, 'billing')).toMatchObject({ deadLettered: 3, requests: 3, circuit: { state: 'CLOSED', opened: 0 } });
    expect(s.deadLetters.map((d) => d.reasonType)).toEqual(['unrecoverable', 'unrecoverable', 'unrecoverable']);
  });

  it('a slow subscriber holds a worker for its latency; past the timeout it is retried, and the consumer dedupes', () => {
    const lab = createLab({ seed: 1 });
    lab.setBehaviour('billing', { kind: 'slow', latencyMs: 1500 });
    lab.sendOne();
    lab.step(1000);
    expect(sub(lab.snapshot(), 'billing')).toMatchObject({ inFlight: 1, delivered: 0 });
    lab.step(1000);
    expect(sub(lab.snapshot(), 'billing')).toMatchObject({ inFlight: 0, delivered: 1, effects: 1 });

    lab.setBehaviour('billing', { kind: 'slow', latencyMs: 2500 });
    lab.sendOne();
    lab.step(2500);
    expect(sub(lab.snapshot(), 'billing')).toMatchObject({ failed: 1, effects: 2 });
    lab.repair('billing');
    lab.step(10_000);
    expect(sub(lab.snapshot(), 'billing')).toMatchObject({ delivered: 2, effects: 2, duplicates: 1 });
  });

  it('commands are data (what scenarios and keyboard shortcuts send) and act at once', () => {
    const lab = createLab({ seed: 1 });
    lab.command({ kind: 'fail', subscriber: 'crm' });
    lab.command({ kind: 'burst', n: 2 });
    expect(sub(lab.snapshot(), 'crm').behaviour).toEqual({ kind: 'failing', status: 503 });
    expect(lab.snapshot().counters).toMatchObject({ events: 2, inFlight: 4 });
    lab.command({ kind: 'repair', subscriber: 'crm' });
    expect(sub(lab.snapshot(), 'crm').behaviour).toEqual({ kind: 'healthy' });
    expect(() => lab.command({ kind: 'explode' } as never)).toThrow(ValidationError);
  });

  it('summarize tells the state in sentences (for screen readers)', () => {
    const lab = createLab({ scenario: 'failure', seed: 1 });
    lab.step(30_000);
    const text = summarize(lab.snapshot());
    expect(text).toContain('Simulated clock at 30.0 s, running at 1 times wall-clock speed. Scenario: Failure.');
    expect(text).toContain('3 events sent, making 9 deliveries: 6 delivered, 0 dead-lettered');
    expect(text).toContain('Billing (https://billing.example/webhooks) is failing: answers 503 to every request; circuit open until 31.8 s');
    expect(text).toContain('Most recent log lines, newest first: 26.8 s: the probe to Billing failed: circuit open again until 31.8 s');
  });

  it('bad input is a validation error naming the field; an unknown subscriber is not_found', () => {
    const lab = createLab({ seed: 1 });
    const field = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        expect(e).toBeInstanceOf(ValidationError);
        return (e as ValidationError).field;
      }
      throw new Error('no error');
    };
    expect(field(() => lab.step(-1))).toBe('ms');
    expect(field(() => lab.burst(0))).toBe('n');
    expect(field(() => lab.fail('billing', 429))).toBe('behaviour.status');
    expect(field(() => lab.setBehaviour('billing', { kind: 'slow', latencyMs: 0 }))).toBe('behaviour.latencyMs');
    expect(field(() => createLab({ seed: -1 }))).toBe('seed');
    expect(field(() => createLab({ config: { workers: 0 } }))).toBe('workers');
    expect(() => lab.fail('nobody')).toThrow(NotFoundError);
    expect(lab.snapshot().counters.events).toBe(0);
  });
});
