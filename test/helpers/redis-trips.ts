import type { Redis } from 'ioredis';

/**
 * Round trips (each pipeline, and each command sent outside one) and commands `client` sends
 * while `f` runs: how many times a code path talks to Redis, not only what it asks. A command
 * sent again (a script call answered NOSCRIPT goes back as EVAL: another test flushed the
 * server's script cache meanwhile) is counted apart, in `resent`, not as the code path's.
 */
export const countRedisTrips = async (client: Redis, f: () => Promise<unknown>): Promise<{ trips: number; commands: number; resent: number }> => {
  const c = client as unknown as { sendCommand: (cmd: unknown, stream?: unknown) => unknown; pipeline: () => { exec: () => unknown } };
  const send = c.sendCommand;
  const pipeline = c.pipeline;
  const n = { trips: 0, commands: 0, resent: 0 };
  const sent = new WeakSet<object>();
  c.sendCommand = function (this: unknown, cmd: unknown, stream?: unknown) {
    if (typeof cmd === 'object' && cmd !== null) {
      if (sent.has(cmd)) {
        n.resent++;
        return send.call(this, cmd, stream);
      }
      sent.add(cmd);
    }
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
