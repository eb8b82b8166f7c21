/**
 * `p`, or the error `onTimeout()` once `ms` have passed without an answer. A rejection of
 * `p` goes through `mapError`, so that an adapter can turn a library's error into one of
 * ours. The timer is cleared either way: a pending timer would keep a process alive.
 */
export const settleWithin = <T>(p: Promise<T>, ms: number, onTimeout: () => Error, mapError: (e: unknown) => unknown = (e) => e): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(onTimeout()), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e) => {
        clearTimeout(t);
        reject(mapError(e));
      },
    );
  });
