import type { Guards, PauseScope } from '../ports/guards';
import type { LogProducer } from '../ports/log';
import { decodeWebhook } from '../domain/webhook';

const DRAIN_BATCH = 200;

/**
 * Resumes a paused endpoint or config: the held webhooks go back to the pending topic in
 * the order they arrived, a batch at a time (produce first, then drop: a crash in between
 * redelivers, never loses). Arrivals during the drain still queue behind, so order holds;
 * the pause ends when the queue is empty. Returns how many webhooks were released.
 */
export const resumeAndDrain = async (guards: Guards, producer: LogProducer, pendingTopic: string, scope: PauseScope): Promise<number> => {
  await guards.resume(scope);
  let released = 0;
  for (;;) {
    const held = await guards.peekHeld(scope, DRAIN_BATCH);
    if (held.length) {
      await producer.send(held.map((data) => ({ topic: pendingTopic, key: decodeWebhook(data).config_id, value: data })));
      released += held.length;
    }
    const left = await guards.dropHeld(scope, held.length);
    if (left === 0) return released;
  }
};
