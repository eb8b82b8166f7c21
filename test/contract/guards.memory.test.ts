import { MemoryGuards } from '../../core/memory/guards';
import { guardsContract } from './guards.contract';

// One MemoryGuards per test; the "second client" of the race tests is the same object.
guardsContract('memory', async () => {
  const guards = new MemoryGuards();
  return { guards, peer: guards, cleanup: async () => {} };
});
