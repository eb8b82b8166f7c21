import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatFigures, profile, repetitions, type Figures } from './harness';
import { chaosInfra } from './infra';
import { joinScenario, rollingScenario } from './membership';
import { operatorScenario } from './operator';
import { flushScenario, kafkaScenario, killScenario, REDIS_OUTAGE_MS, redisScenario, SIZES } from './scenarios';
import { SVIX_FANOUT } from './svix-traffic';

// The chaos suite (docs/RELIABILITY.md "Chaos suite"): the binaries as processes on a
// Kafka broker and a Redis server of its own (ports 19192, 16479, or the next free slot), which it flushes, kills
// and stops. `npm test` runs the ci profile once; `npm run test:chaos` the full sizes,
// each scenario three times in a row.

const results: Figures[] = [];

// Duplicates allowed (2xx answers beyond the first), as a share of the webhooks sent: a
// webhook consumed again whose attempt is known is not sent again (docs/RELIABILITY.md, *Not
// sending again what was delivered*), kill -9 included: what a killed worker had not yet
// written is sent again by design (docs/RELIABILITY.md, "Duplicates"), a few hundred ms of it.
const SHARE = { ci: 0.02, full: 0.005 }[profile];
/** The longest a killed worker's partitions may stand still (docs/RELIABILITY.md, "kill -9"). */
const KILL_STALL_MS = 5000;
/** The longest a webhook may wait from its enqueue to its delivery when a worker is killed (the operator scenario). */
const KILL_E2E_MS = 6000;
/** The longest a worker leaving (SIGTERM) or joining may pause the others. */
const MEMBERSHIP_STALL_MS = 2000;
const fewDuplicates = (f: Figures, share = SHARE) => expect(f.duplicates, `duplicates of ${f.sent} sent`).toBeLessThanOrEqual(Math.floor(f.sent * share));

beforeAll(async () => {
  await chaosInfra.start();
}, 180_000);

afterAll(async () => {
  await chaosInfra.stop();
  mkdirSync('.tmp', { recursive: true });
  writeFileSync(`.tmp/chaos-${profile}.json`, JSON.stringify(results, null, 2));
}, 120_000);

const record = (f: Figures) => {
  results.push(f);
  console.log(formatFigures(f));
  return f;
};

describe(`chaos (${profile} profile, ${repetitions}x)`, () => {
  for (let run = 1; run <= repetitions; run++) {
    it(`1. FLUSHALL mid-stream, a third mid-retry (${SIZES.flush} webhooks) #${run}`, async () => {
      const f = record(await flushScenario(run));
      expect(f).toMatchObject({ lost: 0, wrong_outcome: 0 });
      expect(f.notes.mid_retry_at_flush).toBeGreaterThan(0);
      // Dead letters stay queryable after the loss: the API lists every one Kafka holds.
      expect(f.notes.dead_letters_listed_after).toBe(f.notes.dead_letters_on_topic);
      fewDuplicates(f);
    });

    it(`2. kill -9 of workers and schedulers every 3 s (${SIZES.kill} webhooks, ${SIZES.svix} Svix messages to ${SVIX_FANOUT} endpoints) #${run}`, async () => {
      const f = record(await killScenario(run));
      expect(f).toMatchObject({ lost: 0, wrong_outcome: 0 });
      // Every message answered 202 made one webhook per endpoint, each counted in the books above.
      expect(f.notes).toMatchObject({ svix_messages: SIZES.svix, svix_webhooks: SIZES.svix * SVIX_FANOUT });
      expect(f.notes.kills).toBeGreaterThan(2);
      fewDuplicates(f);
      expect(f.recover_ms, 'longest gap between deliveries').toBeLessThanOrEqual(KILL_STALL_MS);
    });

    it(`3. Kafka broker stopped for 10 s (${SIZES.kafka} webhooks) #${run}`, async () => {
      const f = record(await kafkaScenario(run));
      expect(f).toMatchObject({ lost: 0, wrong_outcome: 0 });
      expect(f.notes.probe_during_outage).toMatch(/^503 Retry-After \d+$/);
      expect(f.notes.refusals_without_503_retry_after).toBe(0);
      fewDuplicates(f);
      // With the fetch hold on (docs/RELIABILITY.md, *Kafka down: the first delivery after the broker's return*).
      expect(f.recover_ms, 'first delivery after the broker was ready, ms').toBeLessThanOrEqual(5000);
    });

    it(`4. Redis stopped for ${REDIS_OUTAGE_MS / 1000} s (${SIZES.redis} webhooks) #${run}`, async () => {
      const f = record(await redisScenario(run));
      expect(f).toMatchObject({ lost: 0, wrong_outcome: 0 });
      // Idempotency fails open; /ready reports the outage; delivery degrades, it does not stop
      // (docs/RELIABILITY.md, "Redis unreachable: delivery degrades, it does not stop").
      expect(f.notes.enqueue_during_outage).toBe('202,202');
      expect(f.notes.ready_during_outage).toBe(503);
      expect(f.notes.delivered_during_outage, 'webhooks delivered while Redis was stopped').toBeGreaterThan(0);
      fewDuplicates(f);
    });

    it(`5. rolling restart: SIGTERM to each of 3 workers in turn #${run}`, async () => {
      const f = record(await rollingScenario(run));
      expect(f).toMatchObject({ lost: 0, wrong_outcome: 0, duplicates: 0 });
      expect(f.notes.restarts).toBe(3);
      expect(f.recover_ms, 'longest gap between deliveries').toBeLessThanOrEqual(MEMBERSHIP_STALL_MS);
    });

    it(`6. a worker joins two busy ones #${run}`, async () => {
      const f = record(await joinScenario(run));
      expect(f).toMatchObject({ lost: 0, wrong_outcome: 0, duplicates: 0 });
      // Reported, not asserted: longest_first_attempt_wait_ms, which also counts the joiner's own
      // cold start on the partitions it takes (0.9-4.2 s on the loaded 2 cores).
      expect(f.recover_ms, 'longest gap between deliveries').toBeLessThanOrEqual(MEMBERSHIP_STALL_MS);
    });

    it(`7. the operator scenario: 2 workers, 300 webhooks/s over 50 endpoints, one killed with -9 at 10 s #${run}`, async () => {
      const f = record(await operatorScenario(run));
      expect(f).toMatchObject({ lost: 0, wrong_outcome: 0 });
      // The duplicate and latency bounds in the full profile (`npm run test:chaos`, the operator's
      // measure), where they are an open goal today (docs/RELIABILITY.md, "kill -9 under load");
      // the ci profile, on whatever else shares the CI machine, reports them.
      if (profile === 'full') {
        fewDuplicates(f);
        expect(f.recover_ms, "kill → the dead worker's partitions delivering again").toBeLessThanOrEqual(KILL_STALL_MS);
        expect(f.notes.enqueue_to_delivery_max_ms, 'longest enqueue → delivery').toBeLessThanOrEqual(KILL_E2E_MS);
      }
    });
  }
});
