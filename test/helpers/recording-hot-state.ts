import type { Clock } from '../../core/ports/clock';
import type { HotBatch } from '../../core/ports/hot-state';
import { MemoryHotState } from '../../core/memory/hot-state';

/** An in-memory hot state that also keeps every batch applied to it, in order (what was written, and in how many writes). */
export const recordingHotState = (clock: Clock): { hot: MemoryHotState; applied: HotBatch[] } => {
  const applied: HotBatch[] = [];
  const hot = new MemoryHotState({ status_ttl: 60_000, stats_ttl: 60_000, retry_data_ttl: 60_000 }, clock);
  const apply = hot.apply.bind(hot);
  hot.apply = async (b: HotBatch) => {
    applied.push(b);
    return apply(b);
  };
  return { hot, applied };
};
