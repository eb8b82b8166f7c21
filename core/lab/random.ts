// A small seeded PRNG (mulberry32): 32 bits of state, so the whole generator is one number
// that a snapshot can carry. Not for secrets; only for the Lab's reproducible jitter.

export type Random = { next: () => number; state: () => number };

/** Uniform numbers in [0, 1); the same seed always gives the same sequence. */
export const createRandom = (seed: number): Random => {
  let s = seed >>> 0;
  return {
    next: () => {
      s = (s + 0x6d2b79f5) >>> 0;
      let t = Math.imul(s ^ (s >>> 15), 1 | s);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
    state: () => s,
  };
};
