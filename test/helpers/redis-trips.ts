import type { Redis } from 'ioredis';

/**
 * Round trips (each pipeline, and each command sent outside one) and commands `client` sends
 * while `f` runs: how many times a code path talks to Redis, not only what it asks.
 */
export const countRedisTrips = async (client: Redis, f: () => Promise<unknown>): Promise<{ trips: number; commands: number }> => {
  const c = client as unknown as { sendCommand: (cmd: unknown, stream?: unknown) => unknown; pipeline: () => { exec: () => unknown } };
  const send = c.sendCommand;
  const pipeline = c.pipeline;
  const n = { trips: 0, commands: 0 };
  c.sendCommand = function (this: unknown, cmd: unknown, stream?: unknown) {
    n.commands++;
    if (!stream) n.trips++;
    return send.call(this, cmd, stream);
  };
  c.pipeline = function (this: unknown) {
    const p = pipeline.call(this);
    const exec = p.exec;
    p.exec = function (this: unknown) {
      n.trips++;
      return exec.call(this);
    };
    return p;
  };
  try {
    await f();
  } finally {
    c.sendCommand = send;
    c.pipeline = pipeline;
  }
  return n;
};
