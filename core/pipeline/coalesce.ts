// Calls made in the same tick share one underlying batch call (one Redis round trip for
// every admission a batch asks for at once, however the calls are spread over the code),
// and calls made while that round trip is out wait for it and then share the next one. A
// pipelined worker asks for one or two admissions per batch; without the second rule each
// became a script call of its own, and the worker's Redis calls per webhook grew tenfold.
export const coalesce = <T, R>(run: (items: T[]) => Promise<R[]>) => {
  let items: T[] = [];
  let waiters: { resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  let scheduled = false;
  let inFlight = false;
  const flush = () => {
    scheduled = false;
    if (!items.length) return;
    const its = items;
    const ws = waiters;
    items = [];
    waiters = [];
    inFlight = true;
    let p: Promise<R[]>;
    try {
      p = run(its);
    } catch (e) {
      p = Promise.reject(e);
    }
    p.then(
      (rs) => ws.forEach((w, i) => w.resolve(rs[i]!)),
      (e) => ws.forEach((w) => w.reject(e)),
    ).finally(() => {
      inFlight = false;
      if (items.length && !scheduled) flush();
    });
  };
  return (item: T): Promise<R> =>
    new Promise<R>((resolve, reject) => {
      items.push(item);
      waiters.push({ resolve, reject });
      if (!scheduled && !inFlight) {
        scheduled = true;
        setTimeout(flush, 0);
      }
    });
};

/**
 * coalesce for calls whose callers wait for no answer (fire and forget): the same batching,
 * with one promise per underlying call instead of one per item. `settled` gets each call's
 * items once it has succeeded or failed (`failed` with its error); `idle` resolves once every
 * item added so far is settled.
 */
export const coalesceSends = <T>(run: (items: T[]) => Promise<unknown>, settled: (items: T[], failed: boolean, error?: unknown) => void) => {
  let items: T[] = [];
  // Settles with the items queued now (made with the first of them).
  let next: { done: Promise<void>; resolve: () => void } | undefined;
  const open = new Set<Promise<void>>();
  let scheduled = false;
  let inFlight = false;
  const flush = () => {
    scheduled = false;
    if (!items.length) return;
    const its = items;
    const batch = next!;
    items = [];
    next = undefined;
    inFlight = true;
    let p: Promise<unknown>;
    try {
      p = run(its);
    } catch (e) {
      p = Promise.reject(e);
    }
    const end = (failed: boolean, e?: unknown) => {
      try {
        settled(its, failed, e);
      } finally {
        open.delete(batch.done);
        batch.resolve();
        inFlight = false;
        if (items.length && !scheduled) flush();
      }
    };
    p.then(
      () => end(false),
      (e) => end(true, e),
    );
  };
  return {
    add(item: T): void {
      items.push(item);
      if (!next) {
        let resolve!: () => void;
        const done = new Promise<void>((r) => (resolve = r));
        next = { done, resolve };
        open.add(done);
      }
      if (!scheduled && !inFlight) {
        scheduled = true;
        setTimeout(flush, 0);
      }
    },
    idle: (): Promise<unknown> => Promise.all(open),
  };
};
