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
  /** Takes a slot if one is free now (nobody waits then: a freed slot passes straight on). Give it back with `release`. */
  const take = (): boolean => (active < max ? (active++, true) : false);
  /** Resolves once a slot is this caller's (after those already waiting). */
  const wait = (): Promise<void> => new Promise<void>((r) => queue.push(r));
  const gate = async <T>(fn: () => Promise<T>): Promise<T> => {
    if (!take()) await wait();
    try {
      return await fn();
    } finally {
      release();
    }
  };
  return Object.assign(gate, { take, wait, release });
};
