// Calls made in the same tick share one underlying batch call (one Redis round trip for
// every admission a batch asks for at once, however the calls are spread over the code),
// and calls made while that round trip is out wait for it and then share the next one. A
// pipelined worker asks for one or two admissions per batch; without the second rule each
// became a script call of its own, and the worker's Redis calls per webhook grew tenfold.
export const coalesce = <T, R>(run: (items: T[]) => Promise<R[]>) => {
  type Waiter = { item: T; resolve: (r: R) => void; reject: (e: unknown) => void };
  const batches = coalesceSends<Waiter>(
    (ws) => run(ws.map((w) => w.item)),
    (ws, failed, outcome) => {
      if (failed) ws.forEach((w) => w.reject(outcome));
      else ws.forEach((w, i) => w.resolve((outcome as R[])[i]!));
    },
  );
  return (item: T): Promise<R> => new Promise<R>((resolve, reject) => batches.add({ item, resolve, reject }));
};

/**
 * coalesce for calls whose callers wait for no answer (fire and forget): the same batching,
 * with one promise per underlying call instead of one per item. `settled` gets each call's
 * items once it has succeeded or failed, with what the call resolved to or (`failed`) its
 * error; `idle` resolves once every item added so far is settled.
 */
export const coalesceSends = <T>(run: (items: T[]) => Promise<unknown>, settled: (items: T[], failed: boolean, outcome?: unknown) => void) => {
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
    const end = (failed: boolean, outcome: unknown) => {
      try {
        settled(its, failed, outcome);
      } finally {
        open.delete(batch.done);
        batch.resolve();
        inFlight = false;
        if (items.length && !scheduled) flush();
      }
    };
    p.then(
      (v) => end(false, v),
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
