import { sleep } from './scheduler';

/** At most `perSecond` passes per second through the returned gate (the slow lane's pace). */
export const createPacer = (perSecond: number) => {
  const interval = 1000 / perSecond;
  let next = 0;
  return async (): Promise<void> => {
    const now = Date.now();
    const at = Math.max(now, next);
    next = at + interval;
    if (at > now) await sleep(at - now);
  };
};
