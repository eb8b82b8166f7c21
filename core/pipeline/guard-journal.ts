import { errorMessage } from '../errors/errors';
import { circuitRecord, pauseRecord, resetCircuitRecord, resumeRecord, type GuardRecord } from '../records/guard';
import { forwardGuards, type Guards } from '../ports/guards';
import type { LogProducer } from '../ports/log';
import type { Logger } from '../ports/logger';

// Guards whose pauses and circuits outlive a Redis loss: each pause, resume and circuit
// reset goes to howk.guards (acks=all) before Redis, so the operator's answer is in Kafka
// before it takes effect; circuit transitions (opened, re-opened by a failed probe, closed)
// follow the completion that caused them. A rebuild restores both
// (core/reconcile/guard-replay.ts; the consistency argument is in docs/RELIABILITY.md).

export type GuardJournalDeps = { producer: LogProducer; topic: string; log: Logger; now: () => number };

export const journaledGuards = (inner: Guards, d: GuardJournalDeps): Guards => {
  const send = (rs: GuardRecord[]) => d.producer.send(rs.map((r) => ({ topic: d.topic, key: r.key, value: r.value })));
  return {
    ...forwardGuards(inner),
    complete: async (done, p) => {
      const moved = await inner.complete(done, p);
      // Only transitions are produced: the happy path adds no produce. The circuit is in
      // force in Redis already; a record that fails is logged and the next transition writes
      // the state again (a rebuild meanwhile would start that circuit closed).
      if (moved.length)
        await send(moved.map(circuitRecord)).catch((e) =>
          d.log.warn('circuit transition not recorded on the guards topic', { error: errorMessage(e), endpoints: [...new Set(moved.map((m) => m.endpointHash))] }),
        );
      return moved;
    },
    resetCircuit: async (hash) => {
      await send([resetCircuitRecord(hash)]);
      await inner.resetCircuit(hash);
    },
    pause: async (scope) => {
      await send([pauseRecord(scope, d.now())]);
      await inner.pause(scope);
    },
    // Recorded at the start of the resume, not when its drain ends: a Redis loss mid-drain
    // must not pause again a scope the operator resumed (its held webhooks are then restored
    // for delivery).
    resume: async (scope, drain, now, leaseMs) => {
      await send([resumeRecord(scope)]);
      return inner.resume(scope, drain, now, leaseMs);
    },
  };
};
