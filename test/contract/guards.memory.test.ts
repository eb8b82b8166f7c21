import { MemoryGuards } from '../../core/memory/guards';
import { guardsContract, type MakeGuards } from './guards.contract';
import { guardsBatchContract } from './guards.contract-batch';
import { guardsGaugesContract } from './guards.contract-gauges';
import { guardsPauseContract } from './guards.contract-pause';
import { guardsRestoreContract } from './guards.contract-restore';

// One MemoryGuards per test; the "second client" of the race tests is the same object.
const make: MakeGuards = async () => {
  const guards = new MemoryGuards();
  return { guards, peer: guards, cleanup: async () => {} };
};
guardsContract('memory', make);
guardsPauseContract('memory', make);
guardsRestoreContract('memory', make);
guardsGaugesContract('memory', make);
guardsBatchContract('memory', make);
