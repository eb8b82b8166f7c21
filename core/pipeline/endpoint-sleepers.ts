/**
 * Webhooks told to wait at their endpoint's limit sleep in line, per endpoint: each local
 * completion of that endpoint wakes the first of them, and the nap's own timer wakes anyone
 * (room made by other workers). Waking them all at once made every completion cost one
 * admission per waiter.
 */
export const createSleepers = () => {
  const lines = new Map<string, (() => void)[]>();
  const nap = (hash: string, ms: number) =>
    new Promise<void>((resolve) => {
      const line = lines.get(hash) ?? [];
      lines.set(hash, line);
      const wake = () => {
        clearTimeout(timer);
        const i = line.indexOf(wake);
        if (i >= 0) line.splice(i, 1);
        if (!line.length && lines.get(hash) === line) lines.delete(hash);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      line.push(wake);
    });
  const wakeNext = (hash: string) => lines.get(hash)?.[0]?.();
  return { nap, wakeNext };
};
