import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteLog } from '../../workers/sqlite/log';
import { logContract } from './log.contract';

let n = 0;
logContract('sqlite', async () => {
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
});
