import { MemoryLog } from '../../core/memory/log';
import { logContract } from './log.contract';

let n = 0;
logContract('memory', async () => {
  const log = new MemoryLog();
  return { log, topic: (base) => `${base}-${++n}`, cleanup: () => log.close() };
});
