/**
 * `fn` remembered by key, at most `max` results: past it the oldest goes first. For a
 * function of a few distinct keys called per message (an endpoint URL, a signing secret),
 * whose result never changes for a key. Results must not be undefined.
 */
export const memoize = <V>(max: number, fn: (key: string) => V): ((key: string) => V) => {
  const cache = new Map<string, V>();
  return (key) => {
    let v = cache.get(key);
    if (v === undefined) {
      v = fn(key);
      if (cache.size >= max) cache.delete(cache.keys().next().value as string);
      cache.set(key, v);
    }
    return v;
  };
};

export type UrlParts = { origin: string; host: string; path: string };

/**
 * An absolute URL's origin, host name and path with its query, parsed once per URL per
 * process: the worker's admission and its sender both need them for every attempt.
 */
export const urlParts = memoize(10_000, (url: string): UrlParts => {
  const u = new URL(url);
  return { origin: u.origin, host: u.hostname, path: `${u.pathname}${u.search}` };
});
