// A counting semaphore.
export const semaphore = (max: number) => {
  let active = 0;
  const queue: (() => void)[] = [];
  // A released slot passes straight to the next waiter, so no newcomer can slip in between.
  const release = () => {
    const next = queue.shift();
    if (next) next();
    else active--;
  };
  const gate = async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= max) await new Promise<void>((r) => queue.push(r));
    else active++;
    try {
      return await fn();
    } finally {
      release();
    }
  };
  return Object.assign(gate, {
    /** Takes a slot if one is free now (nobody waits then: a freed slot passes straight on). Give it back with `release`. */
    take: (): boolean => (active < max ? (active++, true) : false),
    /** Resolves once a slot is this caller's (after those already waiting). */
    wait: (): Promise<void> => new Promise<void>((r) => queue.push(r)),
    release,
  });
};
