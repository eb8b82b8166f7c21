import { MemoryHotState } from '../../core/memory/hot-state';
import { DEFAULT_TTLS, fakeClock } from './hot-state.fixtures';
import { hotStateContract } from './hot-state.contract';

hotStateContract('memory', async (opts) => {
  const clock = fakeClock();
  const state = new MemoryHotState({ ...DEFAULT_TTLS, ...opts?.ttls }, clock);
  return { state, clock, cleanup: () => state.close() };
});
