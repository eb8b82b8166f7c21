import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteLog } from '../../workers/sqlite/log';
import { logContract, type LogHarness } from './log.contract';
import { logPipelineContract } from './log.contract-pipeline';

let n = 0;
const sqliteHarness = async (): Promise<LogHarness> => {
  const dir = mkdtempSync(join(tmpdir(), 'howk-log-contract-'));
  const log = new SqliteLog({ path: join(dir, 'howk.db') });
  return {
    log,
    topic: (base) => `${base}-${++n}`,
    cleanup: async () => {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
};
logContract('sqlite', sqliteHarness);
logPipelineContract('sqlite', sqliteHarness);
