import { ulid } from '../domain/ids';
import { decodeWebhook, encodeWebhook, webhookKey } from '../records/webhook';
import type { Guards, PauseScope } from '../ports/guards';
import type { LogProducer } from '../ports/log';

const DRAIN_BATCH = 200;
/** A drain renews its lease at every batch; a drain that died frees the scope after this. */
export const DRAIN_LEASE_MS = 30_000;
/** A webhook carries the ids of the last few drains that moved it (see holdPaused). */
const KEEP_RELEASES = 4;

export type DrainOutcome =
  /** Every held webhook went back to the pending topic; the pause has ended. */
  | 'drained'
  /** A pause came back during the drain: what was moved stays moved, the rest stays held. */
  | 'paused'
  /** Another resume's drain owns the scope and carries on (this one moved nothing). */
  | 'running'
  /** The scope was not paused. */
  | 'not_paused'
  /** This drain stalled past its lease and another one took the scope over. */
  | 'lost';

export type DrainResult = { released: number; outcome: DrainOutcome };

/**
 * Resumes a paused endpoint or config: the held webhooks go back to the pending topic in
 * the order they arrived, a batch at a time (produce first, then drop: a crash in between
 * redelivers, never loses). One drain owns a scope at a time (a lease), so two resumes never
 * produce the same batch. Every moved webhook carries the drain's id, so the worker delivers
 * it past the draining pause instead of holding it again; arrivals without it still queue
 * behind, so order holds. The drain stops at once when the scope is paused again.
 */
export const resumeAndDrain = async (guards: Guards, producer: LogProducer, pendingTopic: string, scope: PauseScope, now: () => number): Promise<DrainResult> => {
  const drain = `d${ulid(now())}`;
  const start = await guards.resume(scope, drain, now(), DRAIN_LEASE_MS);
  if (start !== 'drain') return { released: 0, outcome: start === 'none' ? 'not_paused' : 'running' };
  let released = 0;
  for (;;) {
    const t = await guards.takeHeld(scope, drain, DRAIN_BATCH, now(), DRAIN_LEASE_MS);
    if (t.kind !== 'batch') return { released, outcome: t.kind === 'done' ? 'drained' : t.kind };
    await producer.send(
      t.items.map((data) => {
        const w = decodeWebhook(data);
        const value = encodeWebhook({ ...w, released_by: [...(w.released_by ?? []).slice(1 - KEEP_RELEASES), drain] });
        return { topic: pendingTopic, key: webhookKey(w), value };
      }),
    );
    const left = await guards.dropHeld(scope, drain, t.items.length);
    released += t.items.length;
    if (left < 0) return { released, outcome: 'lost' };
    if (left === 0) {
      // Emptied: the pause ended, unless it came back meanwhile (takeHeld then says so).
      const again = await guards.takeHeld(scope, drain, DRAIN_BATCH, now(), DRAIN_LEASE_MS);
      if (again.kind !== 'batch') return { released, outcome: again.kind === 'paused' ? 'paused' : 'drained' };
      // Arrivals queued since: go on with them (the batch is taken again at the loop's top).
    }
  }
};
