import { MemoryLog } from '../../core/memory/log';
import { logContract, type LogHarness } from './log.contract';
import { logPipelineContract } from './log.contract-pipeline';

let n = 0;
const memoryHarness = async (): Promise<LogHarness> => {
  const log = new MemoryLog();
  return { log, topic: (base) => `${base}-${++n}`, cleanup: () => log.close() };
};
logContract('memory', memoryHarness);
logPipelineContract('memory', memoryHarness);
