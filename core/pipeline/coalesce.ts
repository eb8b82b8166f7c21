// Calls made in the same tick share one underlying batch call (one Redis round trip for
// every admission a batch asks for at once, however the calls are spread over the code).
export const coalesce = <T, R>(run: (items: T[]) => Promise<R[]>) => {
  let items: T[] = [];
  let waiters: { resolve: (r: R) => void; reject: (e: unknown) => void }[] = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const its = items;
    const ws = waiters;
    items = [];
    waiters = [];
    run(its).then(
      (rs) => ws.forEach((w, i) => w.resolve(rs[i]!)),
      (e) => ws.forEach((w) => w.reject(e)),
    );
  };
  return (item: T): Promise<R> =>
    new Promise<R>((resolve, reject) => {
      items.push(item);
      waiters.push({ resolve, reject });
      if (!scheduled) {
        scheduled = true;
        setTimeout(flush, 0);
      }
    });
};
