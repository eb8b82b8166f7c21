// A counting semaphore and a keyed runner: webhooks of one key (config_id) run at most
// `perKey` at a time, in record order; different keys run side by side.
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

export const runKeyed = async <T>(items: T[], keyOf: (t: T) => string, perKey: number, run: (t: T) => Promise<void>): Promise<void> => {
  const groups = new Map<string, T[]>();
  for (const it of items) {
    const k = keyOf(it);
    let g = groups.get(k);
    if (!g) groups.set(k, (g = []));
    g.push(it);
  }
  await Promise.all(
    [...groups.values()].map(async (g) => {
      let next = 0;
      const lane = async () => {
        while (next < g.length) await run(g[next++]!);
      };
      await Promise.all(Array.from({ length: Math.min(perKey, g.length) }, lane));
    }),
  );
};
