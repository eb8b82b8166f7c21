import { memoryInboundReplays } from '../../core/memory/inbound-replays';
import { fakeClock } from './hot-state.fixtures';
import { inboundReplaysContract } from './inbound-replays.contract';

inboundReplaysContract('memory', async () => {
  const clock = fakeClock();
  const store = memoryInboundReplays(clock.now);
  return { store, peer: store, pass: async (ms) => clock.advance(ms), cleanup: async () => {} };
});
