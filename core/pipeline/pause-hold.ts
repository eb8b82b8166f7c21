import type { Config } from '../config/schema';
import { nowNs } from '../domain/time';
import type { Webhook } from '../domain/webhook';
import type { Clock } from '../ports/clock';
import type { PauseScope } from '../ports/guards';
import type { LogProducer } from '../ports/log';
import { snapshotValue } from '../records/state';
import type { Lane } from '../domain/webhook';
import type { AttemptInput, Elsewhere, PauseMet, Step } from './attempt';

type Attempter = {
  attempt: (i: AttemptInput) => Promise<Step | PauseMet | Elsewhere>;
  hold: (m: PauseMet) => Promise<Step | { pass: PauseScope['kind'] } | undefined>;
};

export type PauseHoldDeps = {
  config: Config;
  clock: Clock;
  producer: LogProducer;
  attempter: Attempter;
  /** Retries a write until it is taken (or the worker stops): the deliverer's. */
  durably: (what: string, fn: () => Promise<unknown>) => Promise<void>;
};

/**
 * The attempt stage with a pause met at admission held here: Kafka first (the webhook's
 * howk.state snapshot), then Redis. A FLUSHALL must never take a held webhook whose snapshot
 * howk.state has not got yet (test/unit/reconcile-flush-race.test.ts). A pause that ended or
 * drained meanwhile sends the webhook back to admission.
 */
export const attemptHoldingPauses = (d: PauseHoldDeps, lane: Lane) => {
  const topic = d.config.kafka.topics.state;
  const snapshot = (w: Webhook) => {
    const at = d.clock.now();
    const patch = { webhook_id: w.id, updated_at_ns: nowNs(at), held: 'paused' as const, next_retry_at: null };
    return d.durably('hold snapshot', () => d.producer.send([{ topic, key: w.id, value: snapshotValue(w, patch, at) }]));
  };
  return async (i: Omit<AttemptInput, 'lane' | 'pass'>): Promise<Step | Elsewhere> => {
    let pass: PauseScope['kind'][] | undefined;
    for (;;) {
      const s = await d.attempter.attempt({ ...i, lane, pass });
      if (s.kind !== 'pause_met') return s;
      await snapshot(i.webhook);
      const held = await d.attempter.hold(s);
      if (held && 'kind' in held) return held;
      pass = held ? [...(pass ?? []), held.pass] : (pass ?? []);
    }
  };
};
