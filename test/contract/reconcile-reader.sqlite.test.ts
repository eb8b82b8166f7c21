import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteLog } from '../../workers/sqlite/log';
import { SqliteTopicReader } from '../../workers/sqlite/topic-reader';
import { readerContract } from './reconcile-reader.contract';

readerContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'howk-reader-contract-'));
  const log = new SqliteLog({ path: join(dir, 'howk.db') });
  let n = 0;
  return {
    reader: new SqliteTopicReader(log),
    topic: async (partitions) => {
      const name = `t${n++}`;
      await log.admin.ensureTopics([{ name, partitions, compacted: true }]);
      return name;
    },
    append: async (records) => log.append(records),
    cleanup: async () => {
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
