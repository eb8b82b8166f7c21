import type { Redis } from 'ioredis';
import { keys } from '../../core/domain/keys';
import type { FirstOutcome, OutcomeBus } from '../../core/ports/outcome-bus';
import { call } from './exec';

/**
 * The outcome bus on Redis pub/sub: PUBLISH on the client given (the worker's hot-state
 * connection), SUBSCRIBE on a connection of its own, made at the first subscribe (ioredis
 * subscribes again after a reconnect). Channels are not per database: listener ids are random.
 */
export const redisOutcomeBus = (redis: Redis): OutcomeBus & { close(): Promise<void> } => {
  let sub: Redis | undefined;
  const handlers = new Map<string, (o: FirstOutcome[]) => void>();
  return {
    async publish(listener, outcomes) {
      if (outcomes.length) await call(() => redis.publish(keys.firstOutcomes(listener), JSON.stringify(outcomes)));
    },
    async subscribe(listener, on) {
      if (!sub) {
        sub = redis.duplicate({ commandTimeout: undefined });
        sub.on('error', () => {}); // reconnects on its own; a message missed only lets a wait expire
        sub.on('message', (channel: string, message: string) => {
          const h = handlers.get(channel);
          if (!h) return;
          try {
            h(JSON.parse(message) as FirstOutcome[]);
          } catch {
            // not ours to fail on: the waits expire
          }
        });
      }
      const channel = keys.firstOutcomes(listener);
      handlers.set(channel, on);
      await sub.subscribe(channel);
      const s = sub;
      return {
        close: async () => {
          handlers.delete(channel);
          await s.unsubscribe(channel).catch(() => {});
        },
      };
    },
    async close() {
      if (sub && sub.status !== 'end') await sub.quit().catch(() => sub?.disconnect());
    },
  };
};
