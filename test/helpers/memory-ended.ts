import { TERMINAL_STATES } from '../../core/domain/status';
import type { MemoryHotState } from '../../core/memory/hot-state';
import type { EndedLookup, SentMark } from '../../core/ports/hot-state';

/** The attempts of the ended webhooks among `ids`, read from the memory hot state's statuses (the Redis lookup reads the same fields). */
export const endedAttemptsOf =
  (hot: MemoryHotState) =>
  async (ids: readonly string[]): Promise<Map<string, number>> => {
    const out = new Map<string, number>();
    for (const id of ids) {
      const s = await hot.getStatus(id);
      if (s && TERMINAL_STATES.has(s.state)) out.set(id, s.attempts);
    }
    return out;
  };

/** Ended statuses from the memory hot state, and sent marks kept in a map (Redis keeps them in the status hash). */
export const memoryEndedStore = (hot: MemoryHotState): { ended: EndedLookup; marks: Map<string, SentMark> } => {
  const marks = new Map<string, SentMark>();
  const endedAttempts = endedAttemptsOf(hot);
  const ended: EndedLookup = {
    endedAttempts,
    lookup: async (ids) => ({ ended: await endedAttempts(ids), sent: new Map(ids.flatMap((id) => (marks.has(id) ? [[id, marks.get(id)!] as const] : []))) }),
    markSent: async (ms) => void ms.forEach(({ id, mark }) => marks.set(id, mark)),
  };
  return { ended, marks };
};
