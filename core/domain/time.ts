// Wall-clock nanosecond stamps for last-write-wins. Date.now() has ms resolution, so a
// per-process counter fills the sub-ms digits to keep stamps from one writer strictly
// increasing. Stamps are 19-digit decimal strings: equal length, so they compare as text
// (Redis Lua numbers are doubles and would lose the low digits).
let lastMs = 0;
let seq = 0;

export const nowNs = (nowMs: number = Date.now()): string => {
  if (nowMs > lastMs) {
    lastMs = nowMs;
    seq = 0;
  } else {
    seq++;
    if (seq > 999_999) {
      lastMs++;
      seq = 0;
    }
  }
  return `${lastMs}${String(seq).padStart(6, '0')}`;
};

export const hourBucket = (ms: number): string => {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}`;
};

export const iso = (ms: number): string => new Date(ms).toISOString();

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
