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
