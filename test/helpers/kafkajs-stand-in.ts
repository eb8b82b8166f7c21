import { EventEmitter } from 'node:events';

/** kafkajs consumer event names the Kafka consumer listens to. */
export const KAFKAJS_EVENTS = { GROUP_JOIN: 'group_join', CRASH: 'crash', HEARTBEAT: 'heartbeat', COMMIT_OFFSETS: 'commit_offsets' };

/**
 * The parts of a kafkajs consumer that the unit tests of workers/kafka/consumer.ts do not drive:
 * events on `bus`, and no-op connection, pause, seek and commit. A test adds its own `run`.
 */
export const kafkajsConsumerBase = (bus: EventEmitter = new EventEmitter()) => ({
  events: KAFKAJS_EVENTS,
  on: (name: string, fn: (e: unknown) => void) => bus.on(name, fn),
  connect: async () => {},
  subscribe: async () => {},
  disconnect: async () => {},
  pause: () => {},
  resume: () => {},
  seek: () => {},
  commitOffsets: async () => {},
});
