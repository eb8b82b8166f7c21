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
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= max) await new Promise<void>((r) => queue.push(r));
    else active++;
    try {
      return await fn();
    } finally {
      release();
    }
  };
};
