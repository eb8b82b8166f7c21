import { claimOf, encodeAnswer, RUNNING, type InboundReplays } from '../ports/inbound-replays';

// Replay marks in memory (howk-dev, embedded tests): one process, so a Map is the shared state.
// Expired marks are dropped when met, and all of them every SWEEP_EVERY claims, so a stream of
// distinct signed requests cannot grow the map past one window's worth.

const SWEEP_EVERY = 1024;

export const memoryInboundReplays = (now: () => number = Date.now): InboundReplays => {
  const marks = new Map<string, { value: string; expiresAt: number }>();
  let claims = 0;
  const live = (key: string) => {
    const m = marks.get(key);
    if (m && m.expiresAt <= now()) marks.delete(key);
    return marks.get(key);
  };
  return {
    claim: async (key, ttlMs) => {
      if (++claims % SWEEP_EVERY === 0) for (const [k, m] of marks) if (m.expiresAt <= now()) marks.delete(k);
      const held = live(key);
      if (!held) marks.set(key, { value: RUNNING, expiresAt: now() + ttlMs });
      return claimOf(held ? held.value : null);
    },
    answer: async (key, answer) => {
      const held = live(key);
      if (held) held.value = encodeAnswer(answer);
    },
    release: async (key) => {
      marks.delete(key);
    },
  };
};
