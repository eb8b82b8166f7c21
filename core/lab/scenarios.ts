import type { Scenario, ScenarioId } from './types';

// The five guided scenarios: scripted commands on the simulated clock. The numbers in the
// texts are those of LAB_CONFIG (core/lab/config.ts); docs/LAB.md walks through each.

export const SCENARIOS: Record<ScenarioId, Scenario> = {
  healthy: {
    id: 'healthy',
    title: 'Healthy',
    summary:
      'Three healthy subscribers acknowledge every delivery the first time. One event at 0 s, then a burst of six at 2 s: each subscriber has a bucket of three tokens refilling one per second, so after three deliveries each the pipeline paces itself to one attempt per subscriber per second.',
    lesson:
      'Fan-out and the local rate limiter: waiting for a token spends no attempt; nothing retries, nothing dead-letters, every event applies exactly one effect per subscriber.',
    commands: [
      { at: 0, command: { kind: 'send' } },
      { at: 2000, command: { kind: 'burst', n: 6 } },
    ],
  },
  failure: {
    id: 'failure',
    title: 'Failure',
    summary:
      "Billing answers 503 to everything. Three events go out; after Billing's third failure its circuit opens and its deliveries are parked, not attempted, while Shipping and CRM keep flowing through the same workers. Every few seconds one probe tests Billing, fails and re-opens the circuit; a delivery that spends its five attempts is dead-lettered.",
    lesson:
      'Retries with bounded exponential backoff, a circuit per subscriber that stops hammering a failing endpoint, and the dead-letter queue as the end of the failure budget.',
    commands: [
      { at: 0, command: { kind: 'fail', subscriber: 'billing', status: 503 } },
      { at: 0, command: { kind: 'burst', n: 3 } },
    ],
  },
  recovery: {
    id: 'recovery',
    title: 'Recovery',
    summary:
      "The same failure, three more events at 5 s (Billing's are parked at once: its circuit is open), then Billing is repaired at 12 s. Repairing it does not close the circuit: the next probe, at 15.9 s, does. The backlog parked behind the probe goes when its park ends, paced by the rate limiter: three at once, then one per second. Nothing is lost and nothing is dead-lettered.",
    lesson: 'A circuit closes on evidence (a probe that succeeds), never on its own; parked deliveries kept their attempts.',
    commands: [
      { at: 0, command: { kind: 'fail', subscriber: 'billing', status: 503 } },
      { at: 0, command: { kind: 'burst', n: 3 } },
      { at: 5000, command: { kind: 'burst', n: 3 } },
      { at: 12_000, command: { kind: 'repair', subscriber: 'billing' } },
    ],
  },
  rate_limit: {
    id: 'rate_limit',
    title: 'Rate limit',
    summary:
      'Billing answers 429 Too Many Requests with Retry-After: 4. Each deferred delivery is retried exactly four seconds later: no backoff, no attempt spent, nothing counted against the circuit. Billing is restored at 10 s and the deferred deliveries complete on their next scheduled try.',
    lesson: 'Retry-After is honoured exactly and draws on a separate deferral budget (six per delivery), so a subscriber that always says "later" cannot loop forever.',
    commands: [
      { at: 0, command: { kind: 'behave', subscriber: 'billing', behaviour: { kind: 'rate_limiting', retryAfterS: 4 } } },
      { at: 0, command: { kind: 'burst', n: 3 } },
      { at: 10_000, command: { kind: 'repair', subscriber: 'billing' } },
    ],
  },
  lost_response: {
    id: 'lost_response',
    title: 'Lost response',
    summary:
      'Billing processes each request and applies its effect, but the response is lost, so the sender sees a timeout and retries. Its responses come back at 3.5 s, before the retries are due: each retry reaches a consumer that already applied that webhook id, which answers 200 and applies nothing.',
    lesson: 'Delivery is at-least-once; an idempotent consumer (dedupe by webhook id) turns it into exactly one effect: effects stay at one per event while duplicates climb.',
    commands: [
      { at: 0, command: { kind: 'behave', subscriber: 'billing', behaviour: { kind: 'lost_response' } } },
      { at: 0, command: { kind: 'send' } },
      { at: 1000, command: { kind: 'send' } },
      { at: 3500, command: { kind: 'repair', subscriber: 'billing' } },
    ],
  },
};

export const SCENARIO_IDS = Object.keys(SCENARIOS) as ScenarioId[];
