/** Polls `cond` every 20 ms; past `timeoutMs` it fails naming `what` and the `state` it last saw. */
export const waitUntil = async (what: string, cond: () => boolean, state: () => unknown = () => undefined, timeoutMs = 20_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; state: ${JSON.stringify(state())}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The integers from `from` up to, not including, `to`. */
export const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
